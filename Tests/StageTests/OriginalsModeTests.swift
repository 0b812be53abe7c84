import Foundation
import Index
import IndexStage
import StageKit
import Testing
import UploadStage

/// `"inbox": {"originals"}` in a definition (upload's `keep_originals` its old name), and
/// what `keep` means to the index stage: a path's new bytes update that path's record.
@Suite struct OriginalsModeTests {
    let registry = StageRegistry([UploadStage.self, IndexStage.self])

    func load(_ inbox: String, upload: String = "{}", indexFirst: Bool = false) throws -> JobDefinition {
        let h = try StageHome()
        let stages = [#"{"use": "upload", "with": \#(upload)}"#, #"{"use": "index", "with": {}}"#]
        let json = #"{"name": "t", \#(inbox) "stages": [\#((indexFirst ? stages.reversed() : stages).joined(separator: ","))]}"#
        return try JobDefinition.load(data: Data(json.utf8), source: "Jobs/t.json", registry: registry, environment: h.environment)
    }

    func message(_ inbox: String, upload: String = "{}", indexFirst: Bool = false) -> String {
        do { _ = try load(inbox, upload: upload, indexFirst: indexFirst); return "loaded" } catch let e as PhotomemoError {
            return e.message
        } catch { return "\(error)" }
    }

    @Test func originalsIsAnInboxOptionAndKeepOriginalsItsOldName() throws {
        #expect(try load("").inbox.originalsMode == .delete)
        #expect(try load(#""inbox": {"originals": "keep"},"#).inbox.originals == .keep)
        #expect(try load("", upload: #"{"keep_originals": "move"}"#).inbox.originals == .move)
        #expect(try load(#""inbox": {"originals": "keep"},"#, upload: #"{"keep_originals": "keep"}"#).inbox.originals == .keep)
        #expect(message(#""inbox": {"originals": "keep"},"#, upload: #"{"keep_originals": "delete"}"#)
            == #"Jobs/t.json: stages[0] (upload): keep_originals is "delete" but inbox.originals is "keep": keep_originals is the old name of inbox.originals; give one of them"#)
        #expect(message(#""inbox": {"originals": "trash"},"#) == #"Jobs/t.json: inbox.originals must be delete, move or keep, not "trash""#)
        #expect(message("", upload: #"{"keep_originals": 1}"#) == #"Jobs/t.json: stages[0] (upload): keep_originals must be delete, move or keep, not 1"#)
    }

    /// A `create` change is a receipt: the original is stored before it.
    @Test func anIndexBeforeTheUploadIsABadDefinition() {
        #expect(message("", indexFirst: true).contains("index must come after upload"))
    }

    /// Any stage that stores the job's files, by its declaration (`storesAssets`), not its name.
    @Test func anIndexBeforeAnyStageThatStoresIsABadDefinition() throws {
        let h = try StageHome()
        let registry = StageRegistry([IndexStage.self, MirrorStage.self])
        let json = #"{"name": "t", "stages": [{"use": "index"}, {"use": "mirror"}]}"#
        #expect(throws: PhotomemoError.self) { try JobDefinition.load(data: Data(json.utf8), source: "Jobs/t.json", registry: registry, environment: h.environment) }
        let after = #"{"name": "t", "stages": [{"use": "mirror"}, {"use": "index"}]}"#
        #expect(try JobDefinition.load(data: Data(after.utf8), source: "Jobs/t.json", registry: registry, environment: h.environment).stages.count == 2)
        do { _ = try JobDefinition.load(data: Data(json.utf8), source: "Jobs/t.json", registry: registry, environment: h.environment) } catch let e as PhotomemoError {
            #expect(e.message.contains("index must come after mirror"))
        }
    }

    /// A stage of another name that stores the job's files (as a second store would).
    struct MirrorStage: Stage {
        static let name = "mirror"
        static let summary = "stores the job's files elsewhere"
        static let workload = StageWorkload.io
        static let options: [StageOption] = []
        static let storesAssets = true
        init(options: StageOptions, environment: StageEnvironment) throws {}
        func run(_ job: JobContext) -> StageOutcome { .continue() }
    }

    static func job(_ key: String, sha: String, original: String, photo: String = "DCIM/a.jpg", taken: String = "2020-05-01T10:00:00Z") -> JobContext {
        let stored = WorkingSet(files: [.init(role: .original, path: "/srv/inbox/" + photo, sha256: sha, bytes: 10, width: 40, height: 30,
                                              storedKey: original)], exif: ["taken": .string(taken)])
        return JobContext(id: 1, key: key, photoPath: "/srv/inbox/" + photo, photoSHA256: sha,
                          memo: .photoOnly(photo, owner: "alice"), results: [:], attempt: 1, working: stored)
    }

    func index(_ h: StageHome, _ originals: InboxOptions.Originals) throws -> IndexStage {
        var inbox = InboxOptions()
        inbox.originals = originals
        let env = StageEnvironment(home: h.environment.home, resources: h.environment.resources, inbox: inbox)
        return try IndexStage(options: StageOptions(validating: [:], against: IndexStage.options, place: "test"), environment: env)
    }

    @Test func keepNewBytesOfAPathUpdateItsRecordAndReleaseTheOldOriginal() throws {
        let h = try StageHome()
        let stage = try index(h, .keep)
        let (one, two) = (String(repeating: "1", count: 64), String(repeating: "2", count: 64))
        let created = try #require(stage.run(Self.job("k1", sha: one, original: "sha256/11/11/one")).result)
        #expect(created["op"] == "create")
        let updated = try #require(stage.run(Self.job("k2", sha: two, original: "sha256/22/22/two", taken: "2026-12-01T09:00:00Z")).result)
        #expect(updated["op"] == "update" && updated["record"] == created["record"])
        let store = try h.environment.recordIndex()
        let records = try store.query(PredicateParser.parse(#"source == "DCIM/a.jpg""#), viewer: .admin).records
        #expect(records.count == 1 && records.first?.sha256 == two && records.first?.source == "DCIM/a.jpg")
        #expect(records.first?.assets["original"]?["key"] == "sha256/22/22/two")
        #expect(try store.releasedAssets(limit: 10) == ["sha256/11/11/one"])
        #expect(try store.query(PredicateParser.parse(#"taken > DATE("2026-01-01")"#), viewer: .admin).records.map(\.id) == records.map(\.id),
                "the new photo's date")
        #expect(try store.query(PredicateParser.parse("sha256 == \"\(two)\""), viewer: .admin).records.map(\.id) == records.map(\.id))
        let feed = try store.changes(since: 0, limit: 10, viewer: .admin)
        #expect(feed.map(\.op) == ["create", "update"])
        #expect(feed.first?.record["source"] == "DCIM/a.jpg" && feed.first?.record["sha256"] == .string(one))
        // Another path is another record.
        #expect(try stage.run(Self.job("k3", sha: String(repeating: "3", count: 64), original: "sha256/33/33/three", photo: "b.jpg")).result?["op"] == "create")
    }

    @Test func deleteNewBytesUnderAnOldNameAreANewRecord() throws {
        let h = try StageHome()
        let stage = try index(h, .delete)
        let created = try #require(stage.run(Self.job("k1", sha: String(repeating: "1", count: 64), original: "sha256/11/11/one")).result)
        let again = try #require(stage.run(Self.job("k2", sha: String(repeating: "2", count: 64), original: "sha256/22/22/two")).result)
        #expect(again["op"] == "create" && again["record"] != created["record"])
    }
}
