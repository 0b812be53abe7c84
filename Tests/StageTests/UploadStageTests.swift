import Foundation
import PhotomemoCore
import Testing
import UploadStage

/// `upload` into a real LocalStore in a temp home: what is stored under which key, what is
/// cleaned up, and that a run again for the same job changes nothing.
@Suite struct UploadStageTests {
    /// A photo in the inbox and one rendition, as validate and compress leave them.
    func job(_ h: StageHome) throws -> (job: JobContext, photo: (path: String, sha: String), display: (path: String, sha: String)) {
        let photo = try h.write("inbox/IMG_1.jpg", "original bytes")
        let display = try h.write("renditions/7/display.jpg", "display bytes")
        let compress: JSONValue = [
            "original": ["format": "jpeg", "width": 4032, "height": 3024],
            "renditions": ["display": ["path": .string(display.path), "sha256": .string(display.sha), "format": "jpeg",
                                       "width": 860, "height": 645]],
        ]
        let ctx = JobContext(id: 7, key: "IMG_1", photoPath: photo.path, photoSHA256: photo.sha,
                             photoRoot: (photo.path as NSString).deletingLastPathComponent, memo: .photoOnly("IMG_1.jpg"),
                             results: ["compress": compress], attempt: 1)
        return (ctx, photo, display)
    }

    static func key(_ sha: String) -> String { "sha256/\(sha.prefix(2))/\(sha.dropFirst(2).prefix(2))/\(sha)" }

    @Test func storesTheOriginalAndRenditionsByContentAndCleansUp() throws {
        let h = try StageHome()
        let (ctx, photo, display) = try job(h)
        let out = try #require(try h.stage(UploadStage.self).run(ctx).result)
        #expect(out["assets"]?["original"]?["key"]?.stringValue == Self.key(photo.sha))
        #expect(out["assets"]?["original"]?["bytes"] == 14 && out["assets"]?["original"]?["width"] == 4032)
        #expect(out["assets"]?["display"]?["key"]?.stringValue == Self.key(display.sha))
        #expect(out["assets"]?["display"]?["width"] == 860)
        #expect(h.storedFiles() == [Self.key(photo.sha), Self.key(display.sha)].sorted())
        let stored = try String(contentsOfFile: h.root + "/store/" + Self.key(photo.sha), encoding: .utf8)
        #expect(stored == "original bytes")
        // Durably stored: the inbox original and the rendition are gone (keep_originals: delete).
        #expect(!h.exists(photo.path) && !h.exists(display.path))
    }

    @Test func aRunAgainForTheSameJobGivesTheSameKeysAndNoDuplicate() throws {
        let h = try StageHome()
        let (ctx, _, _) = try job(h)
        let stage = try h.stage(UploadStage.self)
        let first = try #require(stage.run(ctx).result)
        let files = h.storedFiles()
        // After a crash between "stored" and "journal written": the local files are gone now.
        let second = try #require(stage.run(ctx).result)
        #expect(second == first)
        #expect(h.storedFiles() == files)
    }

    @Test func aRunAgainWithTheFilesStillThereStoresNothingNew() throws {
        let h = try StageHome()
        let (ctx, photo, _) = try job(h)
        let stage = try h.stage(UploadStage.self, ["keep_originals": "keep"])
        let first = try #require(stage.run(ctx).result)
        #expect(h.exists(photo.path))  // kept
        let second = try #require(stage.run(ctx).result)
        #expect(second == first && h.storedFiles().count == 2)
    }

    @Test func moveKeepsTheOriginalInDone() throws {
        let h = try StageHome()
        let (ctx, photo, _) = try job(h)
        #expect(try h.stage(UploadStage.self, ["keep_originals": "move"]).run(ctx).result != nil)
        #expect(!h.exists(photo.path))
        #expect(try String(contentsOfFile: h.root + "/done/IMG_1.jpg", encoding: .utf8) == "original bytes")
    }

    @Test func aRenditionGoneAndNotStoredFailsTheJob() throws {
        let h = try StageHome()
        let (ctx, _, display) = try job(h)
        try FileManager.default.removeItem(atPath: display.path)
        guard case .fail(let why) = try h.stage(UploadStage.self).run(ctx) else {
            Issue.record("a missing rendition did not fail the job")
            return
        }
        #expect(why.contains("display") && why.contains("is gone"))
    }
}
