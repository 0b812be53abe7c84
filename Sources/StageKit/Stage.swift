import Foundation

/// A pipeline stage plugin: a static name, a declared options table, and one method that
/// runs a job's step and says what happened. Stages never sleep or retry themselves: the
/// scheduler owns retries, back-off, concurrency limits and the journal.
///
/// `run` is called off the loop thread (on the libuv work pool), so it may block. It must
/// be idempotent on `job.key`: after a crash between "stage done" and "journal written"
/// the scheduler runs it again for the same job.
public protocol Stage: Sendable {
    /// The name a job definition's `"use"` refers to. Registered once.
    static var name: String { get }
    /// One line for `photomemo check` and the stage's README.
    static var summary: String { get }
    static var options: [StageOption] { get }
    /// CPU-bound stages default to one concurrent job per core and one more, I/O stages to more.
    static var workload: StageWorkload { get }
    /// An option of this stage that is an older name of `"inbox": {"originals"}` (upload's
    /// `keep_originals`): the definition reads it as that, and refuses both differing.
    static var originalsAlias: String? { get }
    /// Whether it works on files on the host that took the photo (the photo, or files made
    /// from it): that host alone claims it and every stage before it (`JobDefinition.photoLocalEnd`).
    static var photoLocal: Bool { get }
    /// Whether it reads the job's memo: a memo that comes after its photo joins the
    /// photo's job only before the first such stage (`JobDefinition.memoStage`).
    static var readsMemo: Bool { get }
    /// Whether a `.continue` result of it names a record it wrote (`"record"`, `"op"`,
    /// `"source"`, `"sha256"`): published to `watch` as `record_create`/`record_update`.
    static var writesRecords: Bool { get }
    /// Whether it stores the job's files in the asset store (noting each one's
    /// `storedKey`): a stage whose record is a receipt that the original is safe comes
    /// after every such stage (the index stage checks it).
    static var storesAssets: Bool { get }
    /// Whether no one outside the daemon sees what a run did (validate's checks; compress's
    /// renditions, its own files until upload stores them). Its outcome when the job moves
    /// on is then committed without waiting for the disk: a power loss that undoes it only
    /// runs the stage again (runs are idempotent), and the next durable commit flushes it.
    static var runsUnseen: Bool { get }

    init(options: StageOptions, environment: StageEnvironment) throws

    func run(_ job: JobContext) -> StageOutcome

    /// The largest photo file this stage accepts (its `max_bytes`), if it has a limit:
    /// intake refuses a bigger file before reading a byte of it.
    var maxPhotoBytes: Int64? { get }

    /// Whether it decodes every photo's image data, so it fails on damage that only
    /// shows in the pixels (compress).
    var decodesPhotos: Bool { get }

    /// What its options need of the job's other stages, checked once all are built (a
    /// `badDefinition` error says what is missing).
    func check(alongside stages: [any Stage]) throws
}

/// A stage that takes several jobs in one call, to share a cost between them (the index
/// stage writes a batch in one transaction: one fsync instead of one per record). Under
/// load the scheduler hands it up to `batchLimit` jobs that became runnable together,
/// one batch per concurrency slot; a lone job comes as a batch of one. Outcomes come back
/// in the order of `jobs`, one each, and each job's outcome is its own (one bad job
/// must not fail its neighbours).
public protocol BatchStage: Stage {
    static var batchLimit: Int { get }
    func run(batch jobs: [JobContext]) -> [StageOutcome]
}

extension BatchStage {
    public static var batchLimit: Int { 64 }
    public func run(_ job: JobContext) -> StageOutcome { run(batch: [job])[0] }
}

extension Stage {
    public static var originalsAlias: String? { nil }
    public static var photoLocal: Bool { false }
    public static var readsMemo: Bool { true }
    public static var writesRecords: Bool { false }
    public static var storesAssets: Bool { false }
    public static var runsUnseen: Bool { false }
    public var maxPhotoBytes: Int64? { nil }
    public var decodesPhotos: Bool { false }
    public func check(alongside stages: [any Stage]) throws {}

    /// How many jobs the scheduler may hand this stage at once (1 unless it is a `BatchStage`).
    public static var jobsPerRun: Int { (Self.self as? any BatchStage.Type)?.batchLimit ?? 1 }

    /// Runs `jobs` (at most `jobsPerRun`): as one batch, or the single job.
    public func run(jobs: [JobContext]) -> [StageOutcome] {
        if let batch = self as? any BatchStage { return batch.run(batch: jobs) }
        precondition(jobs.count == 1, "\(Self.name) is not a batch stage")
        return [run(jobs[0])]
    }
}

public enum StageWorkload: Sendable {
    case cpu
    case io

    /// CPU stages: a run per core and one more, so a core whose run waits on its fsyncs
    /// has the next photo to decode (2 cores: 90% busy instead of 86%, 8% more photos a
    /// second on a 12 MP backlog; benchmarks.md).
    public var defaultConcurrency: Int {
        let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)
        return self == .cpu ? cores + 1 : 4 * cores
    }
}

/// What a stage run decided. The scheduler maps each case onto the job's state. A retry,
/// failure or outage carries an error with a stable code, set where the cause was known
/// (an errno, a status, the stage's own check): the engine decides by the code, never by
/// the message (`DiskSpace`: `no_space` is the disk's outage; quarantine: `photo_gone`).
public enum StageOutcome: Sendable, Equatable {
    /// Done; `result` is kept in the job under the stage's name for later stages.
    case `continue`(result: JSONValue = .emptyObject)
    /// Nothing to do for this job (e.g. compress for a job without a photo).
    case skip(reason: String)
    /// A transient error of the job's own: spends an attempt, retried with back-off.
    case retry(PhotomemoError, after: Duration? = nil)
    /// A dependency (store, index server, webhook host) is unreachable: the job waits with
    /// capped back-off without spending its attempts.
    case unavailable(dependency: String, PhotomemoError)
    /// Can never succeed: the job fails now and its photo goes to quarantine.
    case fail(PhotomemoError)
}

extension StageOutcome {
    /// `.retry(PhotomemoError(code, message), after:)`.
    public static func retry(_ code: PhotomemoError.Code, _ message: String, after: Duration? = nil) -> StageOutcome {
        .retry(PhotomemoError(code, message), after: after)
    }

    /// `.fail(PhotomemoError(code, message))`.
    public static func fail(_ code: PhotomemoError.Code, _ message: String) -> StageOutcome {
        .fail(PhotomemoError(code, message))
    }

    /// `.unavailable(dependency:, PhotomemoError(code, message))`.
    public static func unavailable(dependency: String, _ code: PhotomemoError.Code, _ message: String) -> StageOutcome {
        .unavailable(dependency: dependency, PhotomemoError(code, message))
    }

    /// The error of a retry, failure or outage; nil for continue and skip.
    public var error: PhotomemoError? {
        switch self {
        case .retry(let e, _), .fail(let e), .unavailable(_, let e): e
        case .continue, .skip: nil
        }
    }
}

/// Everything a stage knows about the job it runs.
public struct JobContext: Sendable {
    public let id: Int64
    public let key: String
    /// Absolute path of the photo (inbox file or allowed absolute path); nil for a memo without one.
    public let photoPath: String?
    /// SHA-256 (hex) of the photo's bytes as taken, so a stage can find it in a store after
    /// the inbox file is gone.
    public let photoSHA256: String?
    /// The inbox file's seal when intake hashed it (`PhotoSeal.seal`); nil for other
    /// photos. A stage (and the local store) that finds the file sealed skips its re-hash.
    public let photoSeal: String?
    /// The folder the photo is opened beneath (`PhotoFile`): the inbox, or the --allow-root
    /// holding it; set by the scheduler. nil: no such folder, the photo is not opened.
    public var photoRoot: String?
    /// The job definition's `max_bytes` (its smallest), if any: the most a stage that
    /// declares none of its own (upload) reads of the photo. Set by the scheduler.
    public var maxPhotoBytes: Int64?
    /// The photo is the daemon's own copy of a stored original (`PhotoPolicy.daemonsOwn`):
    /// whoever owns the job, the file is the daemon's, not theirs. Set by the scheduler.
    public var photoIsDaemons = false
    /// The memo line's content, or a plain photo job's defaults.
    public let memo: MemoJob
    /// Results of the stages before this one, by stage name: their history, for
    /// `photomemo job ID` and external programs. A stage reads its input from `working`.
    public let results: [String: JSONValue]
    /// The job's files and facts as the stages before this one left them (`WorkingSet`).
    public var working: WorkingSet { workingCell.value }
    /// Shared by copies of this context: what the run leaves is what the scheduler keeps.
    private let workingCell: LockedValue<WorkingSet>
    /// 1 for the first run of this stage, 2 for the first retry, ...
    public let attempt: Int
    /// Runs of this stage that found a dependency down (they spend no attempt).
    public let outages: Int
    /// Reports how far the stage is (0...1, with an optional note); shows in `watch` as
    /// `stage_progress`. Callable from the stage's thread; cheap, rate-limited by the daemon.
    public var progress: @Sendable (_ fraction: Double, _ note: String?) -> Void = { _, _ in }

    public init(id: Int64, key: String, photoPath: String?, photoSHA256: String? = nil, photoSeal: String? = nil,
                photoRoot: String? = nil, memo: MemoJob, results: [String: JSONValue], attempt: Int, outages: Int = 0,
                working: WorkingSet? = nil) {
        workingCell = LockedValue(working ?? WorkingSet(photoPath: photoPath, sha256: photoSHA256))
        self.id = id
        self.key = key
        self.photoPath = photoPath
        self.photoSHA256 = photoSHA256
        self.photoSeal = photoSeal
        self.photoRoot = photoRoot
        self.memo = memo
        self.results = results
        self.attempt = attempt
        self.outages = outages
    }

    /// Changes the working set; kept for the next stage if this run continues.
    public func update<R>(_ change: (inout WorkingSet) throws -> R) rethrows -> R {
        try workingCell.withLock(change)
    }

    /// The job as JSON, as the exec stage hands it to external programs.
    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "id": .int(id), "key": .string(key), "attempt": .int(Int64(attempt)),
            "memo": memo.json, "results": .object(results), "working_set": working.json,
        ]
        o["photo_path"] = photoPath.map(JSONValue.string) ?? .null
        o["photo_sha256"] = photoSHA256.map(JSONValue.string) ?? .null
        return .object(o)
    }
}
