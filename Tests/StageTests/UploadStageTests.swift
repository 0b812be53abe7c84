import Foundation
import StageKit
import Testing
@testable import UploadStage

/// `upload` into a real LocalStore in a temp home: what is stored under which key, what is
/// cleaned up, and that a run again for the same job changes nothing.
@Suite struct UploadStageTests {
    /// A photo in the inbox and one rendition, as validate and compress leave them.
    func job(_ h: StageHome) throws -> (job: JobContext, photo: (path: String, sha: String), display: (path: String, sha: String)) {
        let photo = try h.write("inbox/IMG_1.jpg", "original bytes")
        let display = try h.write("renditions/7/display.jpg", "display bytes")
        let working = WorkingSet(files: [
            .init(role: .original, path: photo.path, sha256: photo.sha, width: 4032, height: 3024, format: "jpeg"),
            .init(role: .rendition("display"), path: display.path, sha256: display.sha, width: 860, height: 645, format: "jpeg"),
        ])
        let ctx = JobContext(id: 7, key: "IMG_1", photoPath: photo.path, photoSHA256: photo.sha,
                             photoRoot: (photo.path as NSString).deletingLastPathComponent, memo: .photoOnly("IMG_1.jpg"),
                             results: [:], attempt: 1, working: working)
        return (ctx, photo, display)
    }

    /// Upload opens the photo as every stage does (`PhotoFile`): a folder of the path
    /// swapped for a link, or a file not of the job's owner, is refused before the store
    /// reads it, and the reason tells nothing of the file that is there now.
    @Test func aPhotoThroughALinkOrOfAnotherOwnerIsNeverStored() throws {
        let h = try StageHome()
        let taken = try h.write("allowed/sub/IMG.jpg", "original bytes")
        let other = try h.write("elsewhere/IMG.jpg", "someone else's bytes")
        #expect(rename(h.root + "/allowed/sub", h.root + "/allowed/old") == 0)
        #expect(symlink(h.root + "/elsewhere", h.root + "/allowed/sub") == 0)
        func job(owner: String?, sha: String) -> JobContext {
            JobContext(id: 8, key: "IMG", photoPath: taken.path, photoSHA256: sha, photoRoot: h.root + "/allowed",
                       memo: .photoOnly("IMG.jpg", owner: owner), results: [:], attempt: 1)
        }
        let stage = try h.stage(UploadStage.self, ["keep_originals": "keep"])
        guard case .fail(let linked) = stage.run(job(owner: nil, sha: taken.sha)) else { Issue.record("stored through a link"); return }
        #expect(linked.message.contains("symlink") && !linked.message.contains(other.sha.prefix(12)), "\(linked)")
        // The link gone, the file is back, but it is root's and the job is nobody's.
        #expect(unlink(h.root + "/allowed/sub") == 0 && rename(h.root + "/allowed/old", h.root + "/allowed/sub") == 0)
        guard case .fail(let foreign) = stage.run(job(owner: "nobody", sha: taken.sha)) else { Issue.record("stored another's file"); return }
        #expect(foreign.message.hasPrefix("photo changed after it was taken") && !foreign.message.contains("14 bytes"), "\(foreign)")
        #expect(h.storedFiles().isEmpty)
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

    /// Upload releases only the photo: a memo sidecar is intake's to release, once what it
    /// holds was read into a job (MemoSidecarLateTests, MemoSidecarIntakeTests), so upload
    /// leaves it in every mode and never moves it to `done/`.
    @Test func uploadLeavesAMemoSidecarToIntake() throws {
        for mode in ["move", "delete", "keep"] {
            let h = try StageHome()
            let (ctx, photo, _) = try job(h)
            let sidecar = try h.write("inbox/IMG_1.jpg.xmp", "<x/>")
            #expect(try h.stage(UploadStage.self, ["keep_originals": .string(mode)]).run(ctx).result != nil)
            #expect(h.exists(photo.path) == (mode == "keep"), "\(mode)")
            #expect(h.exists(sidecar.path), "\(mode)")
            #expect(!h.exists(h.root + "/done/IMG_1.jpg.xmp"), "\(mode)")
        }
    }

    @Test func aRenditionGoneAndNotStoredFailsTheJob() throws {
        let h = try StageHome()
        let (ctx, _, display) = try job(h)
        try FileManager.default.removeItem(atPath: display.path)
        guard case .fail(let why) = try h.stage(UploadStage.self).run(ctx) else {
            Issue.record("a missing rendition did not fail the job")
            return
        }
        #expect(why.message.contains("display") && why.message.contains("is gone"))
    }
}

/// An upload stage's `store` may only name the definition's: every reader of assets
/// (`asset`, verify, backup, reprocess, the collector) goes there, and objects put
/// elsewhere were records' assets nothing found and nothing backed up.
extension UploadStageTests {
    @Test func anUploadStoreOtherThanTheDefinitionsIsRefused() throws {
        let h = try StageHome()  // the definition's store: file:store
        for same in ["file:store", "file:./store", "file:" + h.root + "/store"] {
            _ = try h.stage(UploadStage.self, ["store": .string(same)])
        }
        do {
            _ = try h.stage(UploadStage.self, ["store": "file:store2"])
            Issue.record("a second store was taken")
        } catch let e as PhotomemoError {
            #expect(e.code == .badDefinition && e.message.hasPrefix(#"upload's "store" (file:store2) is not the definition's "store""#), "\(e)")
        }
        // `serve --store` stands in for the definition's store: an upload naming the
        // definition's as written still starts, and stores in the one given.
        let overridden = StageEnvironment(home: URL(fileURLWithPath: h.root), store: "file:" + h.root + "/elsewhere", writtenStore: "file:store")
        let stage = try UploadStage(options: StageOptions(validating: ["store": "file:store"], against: UploadStage.options, place: "test"),
                                    environment: overridden)
        #expect(stage.store.name.contains("elsewhere"), "\(stage.store.name)")
    }
}
