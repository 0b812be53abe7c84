import ControlProtocol
import EventLoop
import Index
import Journal
import PhotomemoCore
import StageKit

/// The trash's commands: `trash` lists the deleted records the caller could read, and
/// `restore_record` brings one back (the owner's or an admin's) with a `create` change.
/// `delete` and `get --trashed` are `RecordHandlers`'; purging is the `AssetCollector`'s.
final class TrashHandlers: ControlHandler {
    let commands: Set<ControlCommand> = [.trash, .restoreRecord]
    private let records: any RecordIndex
    private let journal: any JobIntake
    private let recordHandlers: RecordHandlers
    private let trashSeconds: @Sendable () -> Double

    /// `recordHandlers`: their off-loop reply and change publisher, shared.
    init(records: any RecordIndex, journal: any JobIntake, recordHandlers: RecordHandlers, trashSeconds: @escaping @Sendable () -> Double) {
        self.records = records
        self.journal = journal
        self.recordHandlers = recordHandlers
        self.trashSeconds = trashSeconds
    }

    /// A memo in `trash`'s list is cut to this many characters: a list, not the records.
    static let memoExcerpt = 200

    func handle(_ command: ControlCommand, _ req: ControlRequest, _ caller: Caller, from conn: ControlConnection,
                reply: @escaping Reply) throws {
        let store = records, viewer = caller.viewer
        switch command {
        case .trash:
            let limit = Int(try req.int(ControlArgument.limit) ?? 100)
            guard (1...1000).contains(limit) else { throw PhotomemoError(.badRequest, "\"limit\" must be from 1 to 1000") }
            let cursor = try req.string(ControlArgument.cursor)
            let purgeAfter = trashSeconds()
            recordHandlers.offLoopRecords(reply) {
                let page = try store.trashList(viewer: viewer, limit: limit, cursor: cursor)
                return ["records": .array(page.records.map { t in
                    var o = t.json(purgeAfter: purgeAfter).objectValue ?? [:]
                    let memo = t.record.memo
                    o["memo"] = .string(String(memo.prefix(Self.memoExcerpt)))
                    o["memo_truncated"] = .bool(memo.count > Self.memoExcerpt)
                    for heavy in ["fields", "assets", "exif", "acl"] { o.removeValue(forKey: heavy) }
                    return .object(o)
                }), "cursor": page.cursor.map(JSONValue.string) ?? .null]
            }
        case .restoreRecord:
            let id = try req.requiredString(ControlArgument.record)
            let publishChange = recordHandlers.changePublisher()
            let journal = self.journal
            recordHandlers.offLoopRecords(reply) {
                let restored = try store.restore(id, viewer: viewer, now: unixNow())
                // Their bytes dropped again are a duplicate again, not a new record.
                try journal.recordsRestored(photos: restored.compactMap { r in r.sha256.map { ($0, r.owner) } })
                for r in restored { publishChange(r.id, "create", caller.ownScope) }
                return ["restored": .array(restored.map { .string($0.id) }), "record": restored[0].json]
            }
        default:
            throw PhotomemoError(.unknownCommand, "\(command.rawValue) is not a trash command")
        }
    }
}
