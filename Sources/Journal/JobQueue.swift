import StageKit

/// What the scheduler needs of the job store: claiming runnable jobs, persisting what it
/// decided for them, leases, and the few settings it keeps. `Journal` is it, on SQLite or
/// on PostgreSQL shared by several daemons. Every call blocks: run them off the loop.
public protocol JobQueue: AnyObject, Sendable {
    /// Claims up to `limit` runnable jobs at a stage and marks them running;
    /// `crashSuspects` claims only jobs that crashed the daemon once (to run alone). A stage
    /// before `photoLocalEnd` (`JobDefinition.photoLocalEnd`) takes only this host's photos.
    func claim(stageIndex: Int, stageName: String, limit: Int, crashSuspects: Bool, photoLocalEnd: Int, now: Double) throws -> [ClaimedJob]
    /// Persists the steps `JobStateMachine` decided for stage runs' jobs (several runs in
    /// one transaction), then claims in the same transaction up to each request's limit
    /// (`Journal+OutcomeClaims`); says what happened to each run's jobs and what it claimed.
    func recordOutcomes(_ runs: [StageRunSteps], thenClaim claims: [ClaimRequest], photoLocalEnd: Int, now: Double) throws -> RecordedOutcomes
    /// Puts claimed jobs that will not start (their stage was paused since) back in the
    /// queue at that stage, spending no attempt.
    func release(_ claims: [(job: ClaimedJob, stage: String)], reason: String, now: Double) throws
    /// Fails the memos whose photo did not arrive in time; returns their ids.
    func expireJoins(now: Double) throws -> [Int64]
    /// The earliest moment a waiting job becomes runnable or a join deadline passes.
    func nextWakeAt() throws -> Double?
    func crashSuspectReady(stageIndexes: [Int], now: Double) throws -> Bool
    /// After a reload changed the stages: moves waiting jobs to where their stage now is.
    func moveStages(from old: [String], to new: [String], now: Double) throws -> Int
    func pendingQuarantines() throws -> [PendingQuarantine]
    func markQuarantined(job: Int64, at path: String, now: Double) throws
    /// A photo job failed: the inbox files taken as its duplicates (and its own, when
    /// `photoGone`) are taken again; returns their names on this host (`Journal.untake`).
    func untake(endedJob job: Int64, photoGone: Bool, now: Double) throws -> [String]
    func setting(_ key: String) throws -> String?
    func setSetting(_ key: String, _ value: String?) throws
    /// How long a claim holds a job for this host (nil: no leases, one daemon per store).
    var leaseSeconds: Double? { get }
    /// Extends this host's leases on the jobs it is running now.
    func renewLeases(_ jobs: [Int64], now: Double) throws
    /// Jobs whose host let their lease run out go back to their stage, for any host.
    func reclaimExpiredLeases(maxAttempts: Int, now: Double) throws -> ResumeCounts
}

extension Journal: JobQueue {}
