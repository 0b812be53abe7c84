import Foundation
import Journal
import StageKit

/// The real journal behind a disk whose outcome writes take `delay` seconds (a slow
/// fsync), or fail while `failing` is set (a full disk that still lets claims through):
/// every other call goes to the journal; `recordOutcomes` returns `delay` after its commit
/// (so claims see the commit before the scheduler hears of it), and notes when each
/// job's outcome was written, by stage.
final class FaultyDiskQueue: JobQueue, @unchecked Sendable {  // `written` is locked
    let journal: Journal
    let delay: Double
    let written = LockedValue<[String: Double]>([:])  // "job:stage" → when recordOutcomes returned
    let failing = LockedValue(false)
    let refused = LockedValue(0)  // outcome writes failed so far
    let outcomeWrites = LockedValue<[Int]>([])  // runs in each outcome write that committed
    let claimedByClaims = LockedValue(0)  // jobs claimed by claims of their own (not by an outcome's transaction)

    init(_ journal: Journal, delay: Double = 0) {
        self.journal = journal
        self.delay = delay
    }

    func recordOutcomes(_ runs: [StageRunSteps], thenClaim claims: [ClaimRequest], photoLocalEnd: Int, now: Double) throws -> RecordedOutcomes {
        if failing.value {
            refused.withLock { $0 += 1 }
            throw PhotomemoError(.database, "database or disk is full")
        }
        let recorded = try journal.recordOutcomes(runs, thenClaim: claims, photoLocalEnd: photoLocalEnd, now: now)
        usleep(UInt32(delay * 1_000_000))
        let at = unixNow()
        outcomeWrites.withLock { $0.append(runs.count) }
        written.withLock { w in for run in runs { for r in run.steps { w["\(r.job.context.id):\(run.stageName)"] = at } } }
        return recorded
    }

    func claim(stageIndex: Int, stageName: String, limit: Int, crashSuspects: Bool, photoLocalEnd: Int, now: Double) throws -> [ClaimedJob] {
        let claimed = try journal.claim(stageIndex: stageIndex, stageName: stageName, limit: limit, crashSuspects: crashSuspects,
                                        photoLocalEnd: photoLocalEnd, now: now)
        claimedByClaims.withLock { $0 += claimed.count }
        return claimed
    }
    func release(_ claims: [(job: ClaimedJob, stage: String)], reason: String, now: Double) throws {
        try journal.release(claims, reason: reason, now: now)
    }
    func expireJoins(now: Double) throws -> [Int64] { try journal.expireJoins(now: now) }
    func nextWakeAt() throws -> Double? { try journal.nextWakeAt() }
    func crashSuspectReady(stageIndexes: [Int], now: Double) throws -> Bool { try journal.crashSuspectReady(stageIndexes: stageIndexes, now: now) }
    func moveStages(from old: [String], to new: [String], now: Double) throws -> Int { try journal.moveStages(from: old, to: new, now: now) }
    func pendingQuarantines() throws -> [PendingQuarantine] { try journal.pendingQuarantines() }
    func markQuarantined(job: Int64, at path: String, now: Double) throws { try journal.markQuarantined(job: job, at: path, now: now) }
    func untake(endedJob job: Int64, photoGone: Bool, now: Double) throws -> [String] {
        try journal.untake(endedJob: job, photoGone: photoGone, now: now)
    }
    func setting(_ key: String) throws -> String? { try journal.setting(key) }
    func setSetting(_ key: String, _ value: String?) throws { try journal.setSetting(key, value) }
    var leaseSeconds: Double? { journal.leaseSeconds }
    func renewLeases(_ jobs: [Int64], now: Double) throws { try journal.renewLeases(jobs, now: now) }
    func reclaimExpiredLeases(maxAttempts: Int, now: Double) throws -> ResumeCounts {
        try journal.reclaimExpiredLeases(maxAttempts: maxAttempts, now: now)
    }
}
