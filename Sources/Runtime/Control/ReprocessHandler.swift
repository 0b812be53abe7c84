import ControlProtocol
import EventLoop
import Foundation
import Index
import Journal
import PhotomemoCore
import StageKit

/// `reprocess PREDICATE [--from STAGE] [--type T]`: each matching record the caller may
/// write runs again from its stored original through the current definition's stages
/// from STAGE, updating the same record (`Journal+Reprocess`). Pages of records are
/// queued off the loop, one transaction a page, so 50,000 matches never hold the socket.
final class ReprocessHandler: ControlHandler {
    let commands: Set<ControlCommand> = [.reprocess]
    static let pageSize = 200
    /// At most this many records without a stored original are named in the answer.
    static let maxListed = 100
    private let loop: EventLoop
    private let journal: any JobJournal
    private let records: any RecordIndex
    private let assets: any AssetStore
    private let scheduler: Scheduler
    /// Where each job's copy of its original waits for it (`Home.reprocess`), and how much may.
    private let room: ReprocessRoom

    init(loop: EventLoop, journal: any JobJournal, records: any RecordIndex, assets: any AssetStore, scheduler: Scheduler, room: ReprocessRoom) {
        self.loop = loop
        self.journal = journal
        self.records = records
        self.assets = assets
        self.scheduler = scheduler
        self.room = room
    }

    func handle(_ command: ControlCommand, _ req: ControlRequest, _ caller: Caller, from conn: ControlConnection,
                reply: @escaping Reply) throws {
        let text = try req.requiredString(ControlArgument.predicate)
        let predicate: RecordPredicate
        do { predicate = try PredicateParser.parse(text) } catch let e as PredicateSyntaxError {
            throw PhotomemoError(.badRequest, "predicate: \(e.description)")
        }
        let type = try req.string(ControlArgument.type)
        let def = scheduler.definition
        let from = try req.string(ControlArgument.from) ?? Self.defaultStart(in: def)
        let stageIndex = try Self.startIndex(from, in: def)
        let (journal, records, assets, room) = (self.journal, self.records, self.assets, self.room)
        let scheduler = self.scheduler
        loop.reply({ result in
            if case .success(let r) = result, (r["enqueued"]?.intValue ?? 0) > 0 { scheduler.pump() }
            reply(result)
        }) {
            // A user's reprocess jobs have a cap of their own, so one request over 100,000
            // records neither copies 100,000 originals nor holds their fresh photos back.
            try MemoIntake.checkRoom(for: caller, in: journal, reprocess: true, then: "reprocess")
            var (matched, enqueued) = (0, 0)
            var missing: [String] = []
            var cursor: String?, stopped: String?
            repeat {
                let page = try records.query(predicate, type: type, sort: [], limit: Self.pageSize, cursor: cursor, viewer: caller.viewer,
                                             maxBytes: nil)
                // A record of a memo alone has no photo to run again: not matched, not "without original".
                let mine = page.records.filter { RecordStore.canWrite($0, caller.viewer) && $0.assets["original"] != nil }
                matched += mine.count
                let keyed = mine.map { (ReprocessJob.key(record: $0.id, changeTag: $0.changeTag, from: from), $0) }
                // In the room's turn, as the copies: requests at once would each pass the cap.
                enqueued += try room.turn(for: caller.isAdmin ? nil : caller.name) { copies in
                    let existing = try journal.existingKeys(keyed.map(\.0))
                    var fresh = keyed.filter { !existing.contains($0.0) }
                    let jobsLeft = try MemoIntake.room(for: caller.name, uid: caller.uid, in: journal, reprocess: true)
                    if jobsLeft < fresh.count {
                        fresh = Array(fresh.prefix(max(0, jobsLeft)))
                        stopped = MemoIntake.atCap(caller.name, reprocess: true, then: "reprocess")
                    }
                    var batch: [ReprocessJob] = []
                    for (key, r) in fresh {
                        if let full = copies.take(r.assets["original"]?["bytes"]?.intValue ?? 0) {
                            stopped = full + "; reprocess again once some jobs have finished"
                            break
                        }
                        guard let job = try Self.job(key: key, record: r, caller: caller, assets: assets, folder: room.folder) else {
                            if missing.count < Self.maxListed { missing.append(r.id) }
                            continue
                        }
                        batch.append(job)
                    }
                    return try journal.enqueueReprocess(batch, stageIndex: stageIndex, now: unixNow()).count
                }
                cursor = page.cursor
            } while cursor != nil && stopped == nil
            return ["enqueued": .int(Int64(enqueued)), "matched": .int(Int64(matched)), "from": .string(from),
                    "without_original": .array(missing.map(JSONValue.string)), "stopped": stopped.map(JSONValue.string) ?? .null]
        }
    }

    /// Where a reprocess starts unless told: the first stage that decodes the photo (the one
    /// making renditions), so the checks intake ran on the original are not run again;
    /// without one, the first stage.
    static func defaultStart(in def: JobDefinition) -> String {
        (def.stages.first { $0.stage.decodesPhotos } ?? def.stages.first)?.name ?? ""
    }

    /// Where the jobs start: a stage of the definition in force that comes before the last
    /// one storing the job's files, so what it makes is stored before the record is written.
    static func startIndex(_ from: String, in def: JobDefinition) throws -> Int {
        let names = def.stages.map(\.name)
        guard let index = def.index(ofStage: from) else {
            let hint = didYouMean(from, names).map { " (did you mean \"\($0)\"?)" } ?? ""
            throw PhotomemoError(.badRequest, "no stage \"\(from)\" in job \(def.name)\(hint); stages: \(names.joined(separator: ", "))")
        }
        guard let store = def.stages.lastIndex(where: { type(of: $0.stage).storesAssets }), index < store else {
            let storing = def.stages.last(where: { type(of: $0.stage).storesAssets })?.name
            throw PhotomemoError(.badRequest, storing.map { "--from \(from): a reprocess must start before \($0), which stores what it makes" }
                                 ?? "job \(def.name) has no stage that stores assets, so nothing can be reprocessed")
        }
        return index
    }

    /// Where the copy of an original a reprocess job with `key` runs from goes: a name of its
    /// own (the key's hash and a random part), never one an earlier job of the key named:
    /// that job's end (a cancel, the retention round's sweep of ended jobs' copies) removes
    /// its own copy, not this one.
    static func copyPath(key: String, format: String, in folder: String) -> String {
        folder + "/" + String(SHA256.hex(Data(key.utf8)).prefix(32)) + "." + String(UInt64.random(in: 0...UInt64.max), radix: 16)
            + "." + format
    }

    /// Removes the copies of cancelled reprocess jobs (the originals stay in the store):
    /// a cancelled job is not run again unless retried, and the copies of jobs a user
    /// queues and cancels, again and again, would otherwise fill the disk.
    static func removeCopies(_ paths: [String], in folder: String?) {
        guard let folder else { return }
        for path in paths where path.hasPrefix(folder + "/") { unlink(path) }
    }

    /// The record's job: its original copied out of the store for it (nil when the record
    /// has no stored original, or the store has lost it). It runs as the record's owner
    /// when an admin asks, else as the user, who may write the record.
    static func job(key: String, record r: Record, caller: Caller, assets: any AssetStore, folder: String) throws -> ReprocessJob? {
        guard let original = r.assets["original"], let stored = original["key"]?.stringValue,
              let sha = original["sha256"]?.stringValue ?? r.sha256 else { return nil }
        let format = original["format"]?.stringValue ?? "jpeg"
        let path = copyPath(key: key, format: format, in: folder)
        do { try assets.get(key: stored, to: path) } catch let e as StoreFailure where e.kind == .permanent {
            Log.error("reprocess: record \(r.id)'s original \(stored) cannot be read from \(assets.name): \(e)")
            return nil
        }
        var memo = MemoJob(memo: r.memo, type: r.type, owner: caller.isAdmin ? r.owner : caller.name)
        memo.record = r.id
        let file = WorkingSet.File(role: .original, path: path, sha256: sha, bytes: original["bytes"]?.intValue,
                                   width: original["width"]?.intValue.map(Int.init), height: original["height"]?.intValue.map(Int.init),
                                   format: format, storedKey: stored)
        return ReprocessJob(key: key, memo: memo, photoPath: path, sha256: sha, working: WorkingSet(files: [file], exif: r.exif))
    }
}
