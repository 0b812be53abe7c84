import Foundation
import Testing
@testable import UploadStage

/// Releasing a stored inbox photo in a tree (issue 26): reached beneath the inbox only, a
/// folder never removed, a nested name moved to `done/` under its flat name.
@Suite struct UploadReleaseTests {
    /// The daemon runs as root: a nested photo's folder swapped for a link (to /etc, to
    /// another user's files) after it was stored must not lead the removal there.
    @Test func aNestedPhotosReleaseFollowsNoLinkAndRemovesNoFolder() throws {
        let h = try StageHome()
        _ = try h.write("inbox/DCIM/a/IMG.jpg", "stored bytes")
        let outside = try h.write("outside/IMG.jpg", "someone else's bytes")
        #expect(rename(h.root + "/inbox/DCIM/a", h.root + "/inbox/DCIM/a.old") == 0)
        #expect(symlink(h.root + "/outside", h.root + "/inbox/DCIM/a") == 0)
        let stage = try h.stage(UploadStage.self, ["keep_originals": "delete"])
        try stage.releaseOriginal(h.root + "/inbox/DCIM/a/IMG.jpg")
        #expect(h.exists(outside.path), "removed through the link")
        // A folder standing at the photo's name now is a sync tool's: never removed.
        _ = try h.write("inbox/DCIM/b/IMG.jpg/inner.jpg", "a folder's file")
        try stage.releaseOriginal(h.root + "/inbox/DCIM/b/IMG.jpg")
        #expect(h.exists(h.root + "/inbox/DCIM/b/IMG.jpg/inner.jpg"))
        // The photo itself goes; its folder stays.
        _ = try h.write("inbox/DCIM/c/IMG.jpg", "stored bytes")
        try stage.releaseOriginal(h.root + "/inbox/DCIM/c/IMG.jpg")
        #expect(!h.exists(h.root + "/inbox/DCIM/c/IMG.jpg") && h.exists(h.root + "/inbox/DCIM/c"))
    }

    @Test func movedNestedPhotosKeepTheirWholePathsAndNeverMeet() throws {
        let h = try StageHome()
        let stage = try h.stage(UploadStage.self, ["keep_originals": "move"])
        for folder in ["2025", "2026"] {
            _ = try h.write("inbox/DCIM/\(folder)/IMG_1.jpg", folder)
            try stage.releaseOriginal(h.root + "/inbox/DCIM/\(folder)/IMG_1.jpg")
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
            _ = try h.write("inbox/" + name, bytes)
            try stage.releaseOriginal(h.root + "/inbox/" + name)
        }
        let done = h.root + "/done/"
        let kept = try FileManager.default.contentsOfDirectory(atPath: done).map { try String(contentsOfFile: done + $0, encoding: .utf8) }
        #expect(kept.sorted() == ["alice's", "bob's", "first", "second"])
        #expect(try String(contentsOfFile: done + "DCIM%2FIMG_1.jpg", encoding: .utf8) == "alice's")
        #expect(try String(contentsOfFile: done + "IMG_2.jpg~2", encoding: .utf8) == "second")
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
