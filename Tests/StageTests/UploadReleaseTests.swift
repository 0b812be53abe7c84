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
