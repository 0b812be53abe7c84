import StageKit
import SQLite

/// One stage run's steps (one job, or a batch) as the scheduler decided them.
public struct StageRunSteps: Sendable {
    public let steps: [(job: ClaimedJob, step: JobStep)]
    public let stageName: String
    public let durationMs: Double
    /// Whether the commit must reach the disk before the steps count (`Stage.runsUnseen`).
    public let durable: Bool

    public init(steps: [(job: ClaimedJob, step: JobStep)], stageName: String, durationMs: Double, durable: Bool = true) {
        self.steps = steps
        self.stageName = stageName
        self.durationMs = durationMs
        self.durable = durable
    }
}

/// A claim the scheduler has room for: up to `limit` runnable jobs at a stage.
public struct ClaimRequest: Sendable, Equatable {
    public let stageIndex: Int
    public let stageName: String
    public let limit: Int

    public init(stageIndex: Int, stageName: String, limit: Int) {
        self.stageIndex = stageIndex
        self.stageName = stageName
        self.limit = limit
    }
}

/// What `recordOutcomes` did: each run's transitions, and the jobs it claimed.
public struct RecordedOutcomes: Sendable {
    public let transitions: [[Transition]]
    public let claimed: [ClaimedJob]
}

/// Claiming in the outcome's transaction: a stage hop without a claim of its own (a
/// transaction and a pool round trip fewer between a run's end and the next stage's
/// start). It is the ordinary claim, so fair share is untouched: a job that just
/// advanced goes straight on only when it is first by turn at its next stage (round
/// robin by owner); else the claim takes whoever's turn it is and the job waits its
/// own. Atomic with the outcome: after a SIGKILL the claimed jobs are `running` at
/// their new stage and resume there, as any claimed job does.
extension Journal {
    func claimAfterOutcomes(_ db: any SQLConnection, _ claims: [ClaimRequest], photoLocalEnd: Int, now: Double) throws -> [ClaimedJob] {
        let claims = claims.filter { $0.limit > 0 }
        guard !claims.isEmpty else { return [] }
        // A job that crashed the daemon once runs alone, after the running ones drain:
        // the scheduler's own claim (`Scheduler.pump`) sees to it; none here meanwhile.
        let suspect = Self.crashSuspectQuery(stageIndexes: claims.map(\.stageIndex), dialect: db.dialect)
        guard try db.queryOne(suspect, [.double(now)]) == nil else { return [] }
        var claimed: [ClaimedJob] = []
        for c in claims {
            claimed += try claim(db, stageIndex: c.stageIndex, stageName: c.stageName, limit: c.limit, crashSuspects: false,
                                 photoLocalEnd: photoLocalEnd, relaxedCommit: false, now: now)
        }
        return claimed
    }
}
