import StageKit

/// Job states, as the socket and CLI name them.
public enum JobState: String, Sendable, CaseIterable {
    case queued, running, waiting, done, failed, cancelled
}

/// Where one queue file has been read up to, committed with the jobs its lines produced.
public struct QueuePosition: Sendable, Equatable {
    public var inode: UInt64
    /// Grows each time the file is read again from the start (truncated, replaced, or
    /// rewritten under the offset): part of every line's key, so keys never repeat.
    public var generation: Int64
    public var offset: Int64
    /// Lines consumed so far in this generation (for "line N" in quarantine reasons).
    public var line: Int64
    /// "LENGTH:SHA256" of the bytes just before `offset`: a file whose bytes there changed
    /// was rewritten, even at the same inode and a larger size.
    public var tail: String?

    public init(inode: UInt64, generation: Int64 = 0, offset: Int64, line: Int64, tail: String? = nil) {
        self.inode = inode
        self.generation = generation
        self.offset = offset
        self.line = line
        self.tail = tail
    }

    public static let start = QueuePosition(inode: 0, offset: 0, line: 0)

    /// The same file (or a new one) read again from its first byte.
    public func restarted(inode: UInt64) -> QueuePosition {
        QueuePosition(inode: inode, generation: generation + 1, offset: 0, line: 0)
    }
}

/// A memo line ready to become a job.
public struct QueuedMemo: Sendable {
    public enum Photo: Sendable, Equatable {
        case none
        /// A photo's path in the inbox: joins a photo already taken, or waits for it.
        case inbox(name: String)
        /// An absolute path under an allowed root, checked and hashed before commit.
        case file(path: String, sha256: String)
        /// An absolute path that could not be used: the job fails at once with this reason.
        case unusable(path: String, reason: String)
    }

    public let memo: MemoJob
    public let photo: Photo
    /// The idempotency key: the line's `key`, or one derived from its position.
    public let key: String
    /// "queue.jsonl line 12 (byte 345)" or "socket".
    public let source: String
    public let origin: String

    public init(memo: MemoJob, photo: Photo, key: String, source: String, origin: String = "queue") {
        self.memo = memo
        self.photo = photo
        self.key = key
        self.source = source
        self.origin = origin
    }
}

/// A complete file taken from the inbox, hashed, ready to become (or join) a job.
public struct TakenPhoto: Sendable {
    public let name: String
    public let path: String
    /// "dev:ino:size:mtime_ns": a file with the same name and identity is not taken twice.
    public let identity: String
    /// `PhotoSeal.seal` when the file was the same before and after intake hashed it; nil
    /// otherwise (then no stage trusts the hash without re-hashing).
    public let seal: String?
    public let sha256: String
    /// The Unix user owning the file: the record's owner unless a memo names one.
    public let owner: String?
    /// Taken from a `keep` inbox (`inbox.originals`): the file stays, so a path taken
    /// before is taken again only for other bytes, as an update of its record.
    public let keep: Bool
    /// The memo sidecar beside it (`MemoSidecar`), read when it was taken.
    public var sidecar: SidecarMemo?

    public init(name: String, path: String, identity: String, seal: String? = nil, sha256: String, owner: String? = nil,
                keep: Bool = false) {
        self.keep = keep
        self.name = name
        self.path = path
        self.identity = identity
        self.seal = seal
        self.sha256 = sha256
        self.owner = owner
    }
}

/// What intake did with one memo or photo, for logs and the scheduler.
public enum IntakeOutcome: Sendable, Equatable {
    case created(job: Int64, state: JobState)
    case joined(job: Int64)
    case duplicate(job: Int64, of: Int64)
    case failed(job: Int64, reason: String)
    case alreadyTaken
}

/// A job handed to a stage by `claim`.
public struct ClaimedJob: Sendable {
    public let context: JobContext
    public let stageIndex: Int
    /// Dependency waits so far at this stage (they spend no attempts).
    public let outages: Int

    public init(context: JobContext, stageIndex: Int, outages: Int = 0) {
        self.context = context
        self.stageIndex = stageIndex
        self.outages = outages
    }
}

/// What `recordSteps` did to a job.
public struct Transition: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case advanced(toStage: Int)
        case finished
        case retrying(afterMs: Int)
        case waitingForDependency(afterMs: Int)
        case failed(reason: String)
        /// The job left `running` while the stage ran (cancelled): nothing recorded.
        case abandoned
    }

    public let kind: Kind
    /// Set when the job failed with a photo that now must go to quarantine.
    public let quarantinePhoto: String?
}

/// A failed job whose photo still has to be moved to quarantine.
public struct PendingQuarantine: Sendable {
    public let job: Int64
    public let photoPath: String
    public let stage: String?
    public let reason: String

    public init(job: Int64, photoPath: String, stage: String?, reason: String) {
        self.job = job
        self.photoPath = photoPath
        self.stage = stage
        self.reason = reason
    }
}

public struct JobSummary: Sendable {
    public let id: Int64
    public let key: String?
    public let state: JobState
    public let stage: String?
    public let attempts: Int
    public let photo: String?
    public let duplicateOf: Int64?
    public let error: String?
    public let quarantine: String?
    public let memo: MemoJob
    public let results: JSONValue
}

extension JobStateMachine {
    /// The steps for one stage run's jobs (one, or a batch), each decided by `step(after:)`;
    /// a job that continues keeps the working set its run left.
    public static func steps(_ runs: [(job: ClaimedJob, outcome: StageOutcome)], stageCount: Int,
                             retry: RetryPolicy) -> [(job: ClaimedJob, step: JobStep)] {
        var rng = SystemRandomNumberGenerator()
        return runs.map { run in
            var next = step(after: run.outcome, attempt: run.job.context.attempt, outages: run.job.outages,
                            stageIndex: run.job.stageIndex, stageCount: stageCount, batch: runs.count, retry: retry, using: &rng)
            if case .continue = run.outcome { next.workingSet = run.job.context.working }
            return (run.job, next)
        }
    }
}

/// What `resumeInterrupted` did at start-up with the jobs the last process left running.
public struct ResumeCounts: Sendable, Equatable {
    /// Queued again at their stage.
    public var resumed = 0
    /// Out of attempts.
    public var failed = 0
    /// Failed because the daemon died of a fatal signal twice while their stage ran.
    public var crashLooped: [Int64] = []

    public init() {}
}

/// A stage's outcome counts and recent latencies, for `status` and `metrics`.
public struct StageStats: Sendable, Equatable {
    public var done = 0, failed = 0, retried = 0, skipped = 0, unavailable = 0
    /// Latencies (ms) of the most recent successful runs, oldest first.
    public var recentMs: [Double] = []

    public init() {}

    /// Nearest-rank percentile (p in 0...1) of `recentMs`.
    public func percentile(_ p: Double) -> Double? {
        guard !recentMs.isEmpty else { return nil }
        let sorted = recentMs.sorted()
        let rank = Int((p * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count, max(1, rank)) - 1]
    }
}

/// Why `retry` or `cancel` refused.
public enum JobControlError: Error, Equatable {
    case notFound
    case conflict(String)
}
