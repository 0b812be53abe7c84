import Foundation
import Journal
import PhotomemoCore
import StageKit
@testable import Runtime

/// A throwaway home folder with the layout, a journal and the intake parts wired up.
final class TestHome {
    let home: Home
    let journal: Journal
    let quarantine: Quarantine
    let photos: PhotoPolicy

    init(allowRoots: [String] = []) throws {
        let root = NSTemporaryDirectory() + "pm-rt-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        home = Home(root)
        try home.prepare()
        journal = try Journal(path: home.journal)
        quarantine = Quarantine(folder: home.quarantine, inbox: home.inbox)
        photos = PhotoPolicy(inbox: home.inbox, allowedRoots: allowRoots)
    }

    deinit { try? FileManager.default.removeItem(atPath: home.root) }

    func queueReader(joinTimeout: Int = 600) -> QueueReader {
        QueueReader(path: home.queueFile, name: "queue.jsonl", journal: journal, quarantine: quarantine,
                    intake: MemoIntake(photos: photos, joinTimeoutSeconds: joinTimeout))
    }

    func scanner(settle: Double = 0) -> InboxScanner {
        InboxScanner(inbox: home.inbox, journal: journal, quarantine: quarantine, settleSeconds: settle)
    }

    func append(_ text: String, to path: String? = nil) throws {
        let p = path ?? home.queueFile
        if !FileManager.default.fileExists(atPath: p) { _ = FileManager.default.createFile(atPath: p, contents: nil) }
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: p))
        try h.seekToEnd()
        try h.write(contentsOf: Data(text.utf8))
        try h.close()
    }

    func jobs() throws -> [JobSummary] { try journal.jobs(limit: 10_000) }

    func quarantined() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: home.quarantine).filter { !$0.hasSuffix(".reason.json") }.sorted()
    }

    var quarantinedCount: Int { (try? quarantined().count) ?? 0 }

    func reason(_ name: String) throws -> JSONValue {
        try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: home.quarantine + "/" + name + ".reason.json")))
    }
}
