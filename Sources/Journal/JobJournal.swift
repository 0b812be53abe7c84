import StageKit

/// What intake needs of the job store: making jobs of queue lines and inbox photos in
/// one transaction with the read position, and the bookkeeping that keeps an inbox file
/// from being taken twice. Queue positions and taken inbox names are this host's own
/// (each daemon has its own home). Every call blocks: run them off the loop.
public protocol JobIntake: AnyObject, Sendable {
    /// This daemon's name on a database several share ('' when it is the only one): keys
    /// derived from its queue files include it, so two hosts' `queue.jsonl` never collide.
    var host: String { get }
    /// The read position of a queue file (`queue.jsonl`, `queue.d/NAME.jsonl`).
    func queuePosition(file: String) throws -> QueuePosition
    /// Commits the jobs of a batch of queue lines together with the file's new read
    /// position; with `position` nil (socket `enqueue`) only the jobs. A memo joins its
    /// photo's job only while the job is before `memoStage` (`JobDefinition.memoStage`).
    func commitMemos(_ memos: [QueuedMemo], position: QueuePosition?, file: String, joinTimeoutSeconds: Int, memoStage: Int,
                     now: Double) throws -> [IntakeOutcome]
    /// Commits complete inbox files as jobs: each joins a waiting memo, is a duplicate of
    /// a job with the same bytes (and owner), or becomes a photo job.
    func commitPhotos(_ photos: [TakenPhoto], now: Double) throws -> [IntakeOutcome]
    /// How many of `owner`'s jobs are queued, running or waiting, counted up to `limit`:
    /// their reprocess jobs, or the others.
    func unfinishedJobs(owner: String, reprocess: Bool, limit: Int) throws -> Int
    /// Of those, how many may still add a record (not past `recordStage`, not a reprocess).
    func jobsBeforeTheirRecord(owner: String, recordStage: Int, limit: Int) throws -> Int
    /// Whether an inbox file with this name and identity is already a job.
    func isTaken(name: String, identity: String) throws -> Bool
    /// Whether it is a photo its own job stored and finished (its release missed it).
    func isStoredAndDone(name: String, identity: String) throws -> Bool
    /// nil when not taken, else why its job failed ("" when it did not).
    func takenFailure(name: String, identity: String) throws -> String?
    /// A memo sidecar of an inbox photo, found on its own: joins or updates the photo's job.
    func commitSidecar(_ sidecar: SidecarMemo, photo: String, owner: String?, memoStage: Int, now: Double) throws -> SidecarOutcome
    /// Of a sidecar's possible photos, the one last taken for `owner` and not failed.
    func takenPhoto(among names: [String], owner: String?) throws -> String?
    /// An inbox entry that can never be a photo: a failed job, already quarantined.
    func recordRejectedEntry(name: String, identity: String, owner: String?, reason: String, quarantinePath: String,
                             now: Double) throws -> Int64
    /// Inbox files that repeat the bytes of a finished job (they may leave the inbox).
    func finishedDuplicates() throws -> [(name: String, identity: String)]
    /// Forgets an inbox file once it has been removed.
    func forgetTaken(name: String) throws
    /// These photos' records were deleted: the same bytes dropped again are a new record.
    func recordsDeleted(photos: [(sha256: String, owner: String?)], now: Double) throws
    /// These records were deleted: their reprocess jobs end (the copies of those cancelled).
    func cancelReprocess(ofRecords ids: [String], now: Double) throws -> [String]
    /// These photos' records came back from the trash: the same bytes are a duplicate again.
    func recordsRestored(photos: [(sha256: String, owner: String?)]) throws
    /// At start: jobs left `running` resume at their stage (the interrupted run counts
    /// as an attempt, unless `started` shows it never began); those a fatal signal
    /// interrupted have a crash counted.
    func resumeInterrupted(maxAttempts: Int, crashed: [Int64: String], started: [Int64: Int]?, signal: String, now: Double) throws -> ResumeCounts
}

/// What the control plane asks and changes: jobs, their history, retry and cancel,
/// counts and per-stage statistics.
public protocol JobControl: AnyObject, Sendable {
    /// Write transactions committed since the process started (the metrics' counters).
    var committed: JournalCommits { get }
    func job(_ id: Int64) throws -> JobSummary?
    /// Newest first, `before` an id, optionally of one state and one owner.
    func jobsPage(state: JobState?, before: Int64?, limit: Int, owner: String?, maxBytes: Int) throws -> (jobs: [JobSummary], more: Bool)
    func history(_ id: Int64) throws -> [(event: String, at: Double, stage: String?, attempt: Int?, durationMs: Double?, message: String?)]
    /// Runs a failed or cancelled job again from where it stopped (`JobControlError` if
    /// its state does not allow it), once `bringBack` has put its photo file in place
    /// (`needed`: it stopped before `photoNeededEnd`, `JobDefinition.photoNeededEnd`).
    func retry(job id: Int64, joinTimeoutSeconds: Int, photoNeededEnd: Int, now: Double,
               bringBack: (_ photoPath: String, _ quarantined: String?, _ needed: Bool) throws -> Void) throws
    func cancel(job id: Int64, now: Double) throws
    /// Bulk control (`Journal+BulkControl`): the newest id, a batch of matching ids, and
    /// retry or cancel of a batch in one transaction.
    func newestJobID() throws -> Int64
    func jobIDs(matching filter: JobFilter, after: Int64, through: Int64, limit: Int) throws -> [(id: Int64, owner: String?)]
    func retry(jobs ids: [Int64], state: JobState, joinTimeoutSeconds: Int, photoNeededEnd: Int, now: Double,
               bringBack: (_ job: Int64, _ photoPath: String, _ quarantined: String?, _ needed: Bool) throws -> Void)
        throws -> (retried: [Int64], refused: [(job: Int64, reason: String)])
    func cancel(jobs ids: [Int64], state: JobState, now: Double) throws -> [Int64]
    /// The SHA-256 hex of every photo, rendition and stored asset a job not done names (its
    /// photo, working set and results): objects the store must keep (`Journal+Maintenance`).
    func contentHashesOfUnfinishedJobs() throws -> Set<String>
    /// Jobs the journal holds per state; those pruned are `prunedCounts`.
    func counts() throws -> [JobState: Int]
    /// Jobs pruned so far per end state (retention).
    func prunedCounts() throws -> [JobState: Int]
    /// Prunes one batch of jobs finished longer ago than `retention` (one transaction).
    func pruneBatch(retention: Retention, limit: Int, now: Double) throws -> PruneBatch
    /// `photomemo reprocess` (`Journal+Reprocess`): which keys are jobs already, queueing
    /// a batch at a stage (returns the keys queued), the reprocess jobs by state and how
    /// many finished since a time.
    func existingKeys(_ keys: [String]) throws -> Set<String>
    func enqueueReprocess(_ jobs: [ReprocessJob], stageIndex: Int, now: Double) throws -> [String]
    func reprocessCounts() throws -> [JobState: Int]
    func reprocessCopiesInUse() throws -> Set<String>
    func reprocessCopies(owner: String) throws -> [String]
    func reprocessCopiesEnded(_ paths: [String]) throws -> Set<String>
    func reprocessJobs(among ids: [Int64]) throws -> [(id: Int64, copy: String?)]
    func strandedReprocessJobs(window: Double, photoLocalEnd: Int, limit: Int, now: Double) throws -> [StrandedReprocessJob]
    func adoptReprocess(_ job: StrandedReprocessJob, copy: String, now: Double) throws -> Bool
    func reprocessFinishedCount(since: Double) throws -> Int
    /// Outcome counts per stage, and the latencies of the last `window` successful runs.
    func stageStats(window: Int) throws -> [String: StageStats]
    func stageHistograms(boundsMs: [Double]) throws -> [String: (buckets: [Int], sumMs: Double, count: Int)]
    func finishedCount(since: Double) throws -> Int
    /// The daemons on this journal seen within `window` seconds (one, on SQLite).
    func hosts(window: Double, now: Double) throws -> [HostSummary]
    /// This daemon's heartbeat: written when it starts (it takes the host id), renewed with
    /// each lease renewal while the host id is still its own (`Journal+Hosts`).
    func heartbeat(_ daemon: DaemonProcess, now: Double) throws
    /// This daemon's name among those sharing the journal ('' on SQLite).
    var host: String { get }
    func renewHeartbeat(_ daemon: DaemonProcess, now: Double) throws -> Bool
    func lastHeartbeat() throws -> (daemon: DaemonProcess, seen: Double)?
    /// Nil while the journal's writes commit; else since when and why they fail.
    var writeFailure: JournalWriteFailure? { get }
}

/// The whole job store the runtime holds: the scheduler's queue, intake and control.
/// `Journal` is it (SQLite in the home, or PostgreSQL).
public protocol JobJournal: JobQueue, JobIntake, JobControl {}

extension Journal: JobJournal {}
