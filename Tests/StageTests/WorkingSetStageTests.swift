import Foundation
import Index
import IndexStage
import StageKit
import Testing
import UploadStage

/// Upload stores the files the working set holds and index writes what upload noted there:
/// a stage between compress and upload that rewrites a rendition has its bytes stored,
/// under their hash, and named by the record, with no stage reading another's result.
@Suite struct WorkingSetStageTests {
    @Test func aRenditionReplacedAfterCompressIsWhatIsStoredAndRecorded() throws {
        let h = try StageHome()
        let photo = try h.write("inbox/IMG_2.jpg", "original bytes")
        let compressed = try h.write("renditions/7/display.jpg", "display bytes")
        let rewritten = try h.write("renditions/7/display.gray.jpg", "grayscale display bytes")
        var working = WorkingSet(photoPath: photo.path, sha256: photo.sha)
        working.put(.init(role: .rendition("display"), path: compressed.path, sha256: compressed.sha, width: 860, height: 645, format: "jpeg"))
        working.exif = ["make": "Canon"]
        // Compress's history says the old file; the working set has the new one.
        let history: JSONValue = ["renditions": ["display": ["path": .string(compressed.path), "sha256": .string(compressed.sha)]]]
        let job = JobContext(id: 9, key: "IMG_2", photoPath: photo.path, photoSHA256: photo.sha,
                             photoRoot: (photo.path as NSString).deletingLastPathComponent, memo: .photoOnly("IMG_2.jpg"),
                             results: ["compress": history], attempt: 1, working: working)
        job.update { $0.change(.rendition("display")) { f in (f.path, f.sha256) = (rewritten.path, rewritten.sha) } }

        let outcome = try h.stage(UploadStage.self).run(job)
        let uploaded = try #require(outcome.result, "\(outcome)")
        #expect(uploaded["assets"]?["display"]?["key"]?.stringValue == UploadStageTests.key(rewritten.sha))
        #expect(h.storedFiles() == [UploadStageTests.key(photo.sha), UploadStageTests.key(rewritten.sha)].sorted())
        #expect(job.working[.rendition("display")]?.storedKey == UploadStageTests.key(rewritten.sha))

        #expect(try h.stage(IndexStage.self).run(job).result?["op"] == "create")
        let record = try #require(try h.environment.recordIndex().query(PredicateParser.parse("TRUEPREDICATE"), viewer: .admin).records.first)
        #expect(record.assets["display"]?["key"]?.stringValue == UploadStageTests.key(rewritten.sha))
        #expect(record.assets["display"]?["sha256"]?.stringValue == rewritten.sha)
        #expect(record.assets["original"]?["key"]?.stringValue == UploadStageTests.key(photo.sha))
        #expect(record.exif["make"] == "Canon")
    }

    /// Annotations are fields of the record where no memo gave one of that name: not over
    /// the job's memo's, and on an update not over a field the record has.
    @Test func annotationsBecomeFieldsNeverOverAMemosOrTheRecordsOwn() throws {
        let h = try StageHome()
        let index = try h.stage(IndexStage.self)
        func job(_ key: String, memo: [String: JSONValue], _ annotations: [String: JSONValue]) throws -> JobContext {
            var working = WorkingSet(photoPath: "/srv/inbox/a.jpg", sha256: String(repeating: "a", count: 64))
            for (name, value) in annotations { try working.annotate(name, value) }
            return JobContext(id: 1, key: key, photoPath: "/srv/inbox/a.jpg", photoSHA256: String(repeating: "a", count: 64),
                              memo: MemoJob(photo: "a.jpg", memo: "m", fields: memo, owner: "alice"), results: [:], attempt: 1, working: working)
        }
        #expect(try index.run(job("k1", memo: ["text": "by hand"], ["text": "ocr", "labels": ["sale"]])).result?["op"] == "create")
        func fields() throws -> [String: JSONValue] {
            try #require(try h.environment.recordIndex().query(PredicateParser.parse("TRUEPREDICATE"), viewer: .admin).records.first).fields
        }
        #expect(try fields() == ["text": "by hand", "labels": ["sale"]])
        // The same bytes again (an update of that record): only the new name is added.
        #expect(try index.run(job("k2", memo: [:], ["text": "ocr 2", "labels": ["other"], "pages": 2])).result?["op"] == "update")
        #expect(try fields() == ["text": "by hand", "labels": ["sale"], "pages": 2])
        let found = try h.environment.recordIndex().query(PredicateParser.parse(#"labels CONTAINS "sale" AND pages == 2"#), viewer: .admin)
        #expect(found.records.count == 1)
    }
}
