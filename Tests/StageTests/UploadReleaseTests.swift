import Foundation
import PhotomemoCore
import Testing
@testable import UploadStage

/// The identity (`PhotoSeal.identity`) of the file at `path` now: what upload stored from.
func identity(_ path: String) -> String {
    var st = stat()
    precondition(lstat(path, &st) == 0, path)
    return PhotoSeal.identity(st)
}

/// Releasing a stored inbox photo in a tree (issue 26): reached beneath the inbox only, a
/// folder never removed, a nested name moved to `done/` under its flat name.
@Suite struct UploadReleaseTests {
    /// The daemon runs as root: a nested photo's folder swapped for a link (to /etc, to
    /// another user's files) after it was stored must not lead the removal there.
    @Test func aNestedPhotosReleaseFollowsNoLinkAndRemovesNoFolder() throws {
        let h = try StageHome()
        let stored = try h.write("inbox/DCIM/a/IMG.jpg", "stored bytes")
        let id = identity(stored.path)
        let outside = try h.write("outside/IMG.jpg", "someone else's bytes")
        #expect(rename(h.root + "/inbox/DCIM/a", h.root + "/inbox/DCIM/a.old") == 0)
        #expect(symlink(h.root + "/outside", h.root + "/inbox/DCIM/a") == 0)
        let stage = try h.stage(UploadStage.self, ["keep_originals": "delete"])
        try stage.releaseOriginal(h.root + "/inbox/DCIM/a/IMG.jpg", identity: id)
        #expect(h.exists(outside.path), "removed through the link")
        // A folder standing at the photo's name now is a sync tool's: never removed.
        let b = try h.write("inbox/DCIM/b/IMG.jpg", "stored bytes")
        let bID = identity(b.path)
        #expect(unlink(b.path) == 0)
        _ = try h.write("inbox/DCIM/b/IMG.jpg/inner.jpg", "a folder's file")
        try stage.releaseOriginal(h.root + "/inbox/DCIM/b/IMG.jpg", identity: bID)
        #expect(h.exists(h.root + "/inbox/DCIM/b/IMG.jpg/inner.jpg"))
        // The photo itself goes; its folder stays.
        let c = try h.write("inbox/DCIM/c/IMG.jpg", "stored bytes")
        try stage.releaseOriginal(c.path, identity: identity(c.path))
        #expect(!h.exists(h.root + "/inbox/DCIM/c/IMG.jpg") && h.exists(h.root + "/inbox/DCIM/c"))
    }

    @Test func movedNestedPhotosKeepTheirWholePathsAndNeverMeet() throws {
        let h = try StageHome()
        let stage = try h.stage(UploadStage.self, ["keep_originals": "move"])
        for folder in ["2025", "2026"] {
            let photo = try h.write("inbox/DCIM/\(folder)/IMG_1.jpg", folder)
            try stage.releaseOriginal(photo.path, identity: identity(photo.path))
        }
        #expect(try String(contentsOfFile: h.root + "/done/DCIM%2F2025%2FIMG_1.jpg", encoding: .utf8) == "2025")
        #expect(try String(contentsOfFile: h.root + "/done/DCIM%2F2026%2FIMG_1.jpg", encoding: .utf8) == "2026")
        #expect(h.exists(h.root + "/inbox/DCIM/2025") && !h.exists(h.root + "/inbox/DCIM/2025/IMG_1.jpg"))
    }

    /// `done/` never loses an original to a later one of the same flat name: a camera's
    /// counter reset (`IMG_2.jpg` again), or another user's top-level `DCIM%2FIMG_1.jpg`
    /// after a nested `DCIM/IMG_1.jpg` (the daemon, as root, renamed it over the first).
    @Test func aMovedPhotoNeverReplacesOneAlreadyInDone() throws {
        let h = try StageHome()
        let stage = try h.stage(UploadStage.self, ["keep_originals": "move"])
        for (name, bytes) in [("DCIM/IMG_1.jpg", "alice's"), ("DCIM%2FIMG_1.jpg", "bob's"), ("IMG_2.jpg", "first"), ("IMG_2.jpg", "second")] {
            let photo = try h.write("inbox/" + name, bytes)
            try stage.releaseOriginal(photo.path, identity: identity(photo.path))
        }
        let done = h.root + "/done/"
        let kept = try FileManager.default.contentsOfDirectory(atPath: done).map { try String(contentsOfFile: done + $0, encoding: .utf8) }
        #expect(kept.sorted() == ["alice's", "bob's", "first", "second"])
        #expect(try String(contentsOfFile: done + "DCIM%2FIMG_1.jpg", encoding: .utf8) == "alice's")
        #expect(try String(contentsOfFile: done + "IMG_2.jpg~2", encoding: .utf8) == "second")
    }
}

/// Only the file upload stored leaves the inbox: a photo renamed over it since (an rsync
/// update, another user's drop at a name freed in a sticky inbox), or written anew at the
/// name, is a drop of its own. Upload removed whatever stood at the name: the newer photo
/// was lost, its own job failing with `photo file is gone`.
@Suite struct UploadReleaseIdentityTests {
    @Test(arguments: ["delete", "move"]) func aPhotoRenamedOverTheStoredOneStays(originals: String) throws {
        let h = try StageHome()
        let stage = try h.stage(UploadStage.self, ["keep_originals": .string(originals)])
        let stored = try h.write("inbox/IMG_1.jpg", "version 1")
        let id = identity(stored.path)
        _ = try h.write("inbox/.IMG_1.jpg.part", "version 2")
        #expect(rename(h.root + "/inbox/.IMG_1.jpg.part", stored.path) == 0)
        try stage.releaseOriginal(stored.path, identity: id)
        #expect(try String(contentsOfFile: stored.path, encoding: .utf8) == "version 2")
        #expect(!h.exists(h.root + "/done/IMG_1.jpg"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: h.root + "/inbox") == ["IMG_1.jpg"], "nothing left aside")
    }

    @Test func aPhotoRewrittenInPlaceSinceItWasStoredStays() throws {
        let h = try StageHome()
        let stage = try h.stage(UploadStage.self, ["keep_originals": "delete"])
        let stored = try h.write("inbox/IMG_1.jpg", "version 1")
        let id = identity(stored.path)
        let fd = open(stored.path, O_WRONLY | O_TRUNC)  // the same inode: a new size and mtime
        #expect(fd >= 0 && write(fd, "version 2, longer", 17) == 17)
        close(fd)
        #expect(identity(stored.path) != id)
        try stage.releaseOriginal(stored.path, identity: id)
        #expect(try String(contentsOfFile: stored.path, encoding: .utf8) == "version 2, longer")
    }
}

/// Each photo format validate accepts is stored with its MIME type (AVIF: image/avif), not
/// application/octet-stream.
@Suite struct UploadContentTypeTests {
    @Test func everyAcceptedFormatHasItsContentType() {
        for (format, type) in ["jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp", "heic": "image/heic", "avif": "image/avif"] {
            #expect(UploadStage.contentTypes[format] == type, "\(format)")
        }
    }
}
