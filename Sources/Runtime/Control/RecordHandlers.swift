import ControlProtocol
import EventLoop
import Foundation
import Index
import Journal
import StageKit

/// The record commands of the control socket: query, get, update, delete, asset, changes
/// (the trash's own, `trash` and `restore_record`, are `TrashHandlers`).
/// The caller (SO_PEERCRED) decides what they see: admins see everything, anyone else what
/// the records' ACL grants their user name (`AccessPolicy`).
final class RecordHandlers: ControlHandler {
    let commands: Set<ControlCommand> = [.query, .get, .update, .delete, .asset, .changes]
    let loop: EventLoop
    let records: any RecordIndex
    let assets: any AssetStore
    private let journal: any JobIntake
    private let events: EventBus
    private let wakeup: LoopWakeup.Sender
    /// Runs the asset collector now (after a delete).
    private let collectAssets: () -> Void
    /// The definition's `"trash"` in seconds (0: off), read at each delete.
    private let trashSeconds: @Sendable () -> Double
    /// One query of a user at a time: the others wait on that user's turn only.
    let queries = QueryGate(perUser: 1)

    /// `HOME/reprocess`: the copies of a deleted record's cancelled reprocess jobs go.
    private let reprocessCopies: String?

    init(loop: EventLoop, records: any RecordIndex, assets: any AssetStore, journal: any JobIntake, events: EventBus,
         wakeup: LoopWakeup.Sender, collectAssets: @escaping () -> Void, trashSeconds: @escaping @Sendable () -> Double,
         reprocessCopies: String? = nil) {
        self.reprocessCopies = reprocessCopies
        self.loop = loop
        self.records = records
        self.assets = assets
        self.journal = journal
        self.events = events
        self.wakeup = wakeup
        self.collectAssets = collectAssets
        self.trashSeconds = trashSeconds
    }

    static func recordError(_ error: Error) -> Error {
        switch error {
        case RecordWriteError.notFound: PhotomemoError(.notFound, "no such record (or not visible to you)")
        case RecordWriteError.noSubscription: PhotomemoError(.notFound, "no such subscription (or not yours)")
        case RecordWriteError.forbidden: PhotomemoError(.forbidden, "the record's ACL does not let you change it")
        case RecordWriteError.badReference(let field, let record):
            PhotomemoError(.badReference, RecordWriteError.badReferenceMessage(field: field, record: record))
        case RecordWriteError.conflict(let current):
            PhotomemoError(.conflict, "the record changed since that tag; its change_tag is now \(current)")
        case let e as PredicateSyntaxError: PhotomemoError(.badRequest, "\(e.subject): \(e.description)")
        default: error
        }
    }

    func handle(_ command: ControlCommand, _ req: ControlRequest, _ caller: Caller, from conn: ControlConnection,
                reply: @escaping Reply) throws {
        let store = records
        let viewer = caller.viewer
        switch command {
        case .query:
            let predicate = try req.string("predicate") ?? "TRUEPREDICATE"
            let type = try req.string("type")
            let sort = try req.string("sort") ?? ""
            let limit = Int(try req.int("limit") ?? 100)
            guard (1...1000).contains(limit) else { throw PhotomemoError(.badRequest, "\"limit\" must be from 1 to 1000") }
            let cursor = try req.string("cursor")
            offLoopRead(caller, conn, reply) {
                let page = try store.query(try PredicateParser.parse(predicate), type: type, sort: try SortKey.parse(sort),
                                           limit: limit, cursor: cursor, viewer: viewer, maxBytes: Self.pageBytes)
                return ["records": .array(page.records.map(\.json)), "cursor": page.cursor.map(JSONValue.string) ?? .null]
            }
        case .get:
            let id = try req.requiredString("record")
            if try req.bool(ControlArgument.trashed) == true {
                let purgeAfter = trashSeconds()
                offLoopRecords(reply) {
                    guard let t = try store.getTrashed(id, viewer: viewer) else { throw RecordWriteError.notFound }
                    return t.json(purgeAfter: purgeAfter)
                }
                return
            }
            offLoopRecords(reply) {
                guard let r = try store.get(id, viewer: viewer) else { throw RecordWriteError.notFound }
                // Reference fields the caller cannot follow (the target is gone or not theirs to read).
                var o = r.json.objectValue ?? [:]
                o["dangling"] = .array(try store.danglingReferences(of: r, viewer: viewer).map(JSONValue.string))
                return .object(o)
            }
        case .update:
            let id = try req.requiredString("record")
            let (memo, fields) = try Self.memoAndFields(req)
            let ifTag = try req.string("if_tag")
            let acl = try Self.acl(req)
            let publishChange = changePublisher()
            offLoopRecords(reply) {
                let r = try store.update(id, memo: memo, fields: fields, acl: acl, ifTag: ifTag, viewer: viewer)
                publishChange(r.id, "update", r.owner)
                return r.json
            }
        case .delete:
            let id = try req.requiredString("record")
            let publishChange = changePublisher()
            let journal = self.journal, collect = collectAssets, copies = reprocessCopies
            let mode: DeleteMode = try req.bool(ControlArgument.purge) == true ? .purge : trashSeconds() > 0 ? .trash : .immediate
            offLoopRecords({ result in
                reply(result)
                collect()  // the released objects leave the store now, not at the next round
            }) {
                let d = try store.delete(id, viewer: viewer, mode: mode, now: unixNow())
                // A trashed record's bytes dropped again make a new record, as after a purge.
                try journal.recordsDeleted(photos: d.photos, now: unixNow())
                ReprocessHandler.removeCopies(try journal.cancelReprocess(ofRecords: d.deleted, now: unixNow()), in: copies)
                for id in d.deleted { publishChange(id, "delete", caller.ownScope) }
                var result: [String: JSONValue] = ["deleted": .array(d.deleted.map(JSONValue.string)),
                                                   "trashed": .array(d.trashed.map(JSONValue.string))]
                // Which objects no record uses any more depends on everyone's records (another
                // user may have stored the same bytes): an admin's to see, not a user's.
                if caller.isAdmin { result["released_assets"] = .array(d.releasedAssets.map(JSONValue.string)) }
                return .object(result)
            }
        case .changes:
            let since = try req.int("since") ?? 0
            let limit = Int(try req.int("limit") ?? 100)
            guard (1...1000).contains(limit) else { throw PhotomemoError(.badRequest, "\"limit\" must be from 1 to 1000") }
            // A user's page may walk everyone's changes: it waits its turn with their queries.
            offLoopRead(caller, conn, reply) {
                let list = try store.changes(since: since, limit: limit, viewer: viewer, maxBytes: Self.pageBytes)
                return ["changes": .array(list.map(\.json)), "next": .int(list.last?.seq ?? since)]
            }
        case .asset:
            try streamAsset(req, records: store, viewer: viewer, to: conn, reply: reply)
        default:
            throw PhotomemoError(.unknownCommand, "\(command.rawValue) is not a record command")
        }
    }

    /// A `query` or `changes` page holds at most about this much record text (fewer
    /// records than `limit`, with a cursor or `next` for the rest): a page of 1000 records
    /// of 1 MiB memos would otherwise be built whole in memory, per request.
    static let pageBytes = 4 << 20

    /// `acl` of an update, if given, by the rules of a memo line's (`ACL(parsing:)`).
    static func acl(_ req: ControlRequest) throws -> ACL? {
        try req.values["acl"].map { try ACL(parsing: $0, code: .badRequest) }
    }

    /// `memo` and `fields` of an update: the same rules as a job line (field names and
    /// types, no NUL anywhere); a null field removes it.
    static func memoAndFields(_ req: ControlRequest) throws -> (memo: String?, fields: [String: JSONValue]) {
        let memo = try req.string("memo")
        var fields: [String: JSONValue] = [:]
        if let f = req.values["fields"] {
            guard case .object(let o) = f else { throw PhotomemoError(.badRequest, "\"fields\" must be an object") }
            fields = o
        }
        var line: [String: JSONValue] = ["fields": .object(fields.filter { $0.value != .null })]
        line["memo"] = memo.map(JSONValue.string)
        do { _ = try MemoJob(line: .object(line)) } catch let e as PhotomemoError {
            throw PhotomemoError(.badRequest, e.message)
        }
        return (memo, fields)
    }

    /// Record changes made over the socket show in `watch` like the pipeline's.
    /// Each goes to the record's owner (and admins).
    func changePublisher() -> @Sendable (_ id: String, _ op: String, _ owner: String?) -> Void {
        nonisolated(unsafe) let events = self.events  // used only in closures run on the loop
        let loop = wakeup
        return { id, op, owner in loop.execute { events.publish("record_\(op)", job: nil, ["record": .string(id)], to: .owner(owner)) } }
    }

    func disconnected(_ conn: ControlConnection) { queries.disconnected(conn) }

    /// A read whose cost grows with the index (query, changes): off the loop, in the
    /// caller's turn (`QueryGate`).
    private func offLoopRead(_ caller: Caller, _ conn: ControlConnection, _ reply: @escaping Reply,
                             _ work: @escaping @Sendable () throws -> JSONValue) {
        queries.admit(caller, connection: conn) { [self] done in
            offLoopRecords({ result in done(); reply(result) }, work)
        }
    }

    func offLoopRecords(_ reply: @escaping Reply, _ work: @escaping @Sendable () throws -> JSONValue) {
        loop.reply(reply) {
            do { return try work() } catch { throw Self.recordError(error) }
        }
    }
}
