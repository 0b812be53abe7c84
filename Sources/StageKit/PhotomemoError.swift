/// An error with a stable machine-readable code (what the socket and logs show) and a
/// message for people. One struct for the whole project, like swift-jobs' error codes.
public struct PhotomemoError: Error, Sendable, CustomStringConvertible, Equatable {
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let badJSON = Code(rawValue: "bad_json")
        public static let badJob = Code(rawValue: "bad_job")
        public static let badDefinition = Code(rawValue: "bad_definition")
        public static let badPath = Code(rawValue: "bad_path")
        public static let badUsage = Code(rawValue: "bad_usage")
        public static let io = Code(rawValue: "io")
        /// The filesystem refused a write for room (ENOSPC, EDQUOT, SQLITE_FULL): an outage
        /// of the `disk` dependency, not the job's fault.
        public static let noSpace = Code(rawValue: "no_space")
        public static let database = Code(rawValue: "database")
        public static let notFound = Code(rawValue: "not_found")
        public static let locked = Code(rawValue: "locked")
        public static let unsafeHome = Code(rawValue: "unsafe_home")
        public static let badImage = Code(rawValue: "bad_image")
        public static let internalError = Code(rawValue: "internal")
        public static let badRequest = Code(rawValue: "bad_request")
        public static let unknownCommand = Code(rawValue: "unknown_command")
        public static let requestTooLarge = Code(rawValue: "request_too_large")
        public static let conflict = Code(rawValue: "conflict")
        public static let badReference = Code(rawValue: "bad_reference")
        public static let forbidden = Code(rawValue: "forbidden")
        public static let tooSlow = Code(rawValue: "too_slow")
        public static let tooExpensive = Code(rawValue: "too_expensive")
        public static let tooManyJobs = Code(rawValue: "too_many_jobs")
        /// A user's `"quota"` (records or bytes) does not allow what they asked to add.
        public static let overQuota = Code(rawValue: "over_quota")
        public static let tooManySubscriptions = Code(rawValue: "too_many_subscriptions")
        public static let notRunning = Code(rawValue: "not_running")
        /// The job's photo file is gone: a stage found no file where it was taken (nor, for
        /// upload, in the store), or `retry` found it neither there nor in quarantine.
        public static let photoGone = Code(rawValue: "photo_gone")

        // Codes of stage outcomes (`StageOutcome`), besides the ones above.

        /// A dependency (a store, the index server, a webhook host, what an exec program
        /// talks to) could not be reached: an outage's code when no finer one is known.
        public static let dependency = Code(rawValue: "dependency")
        /// A stage's work ran out of time (an exec program past its `timeout_ms`).
        public static let timeout = Code(rawValue: "timeout")
        /// The job's input is refused by a stage for what it says, not for its image (an
        /// exec program's exit 65).
        public static let badInput = Code(rawValue: "bad_input")
        /// A stage's error that names no finer cause: an exec program's answer without a
        /// `"code"`, its exit status or signal, a thrown error without a code.
        public static let stageError = Code(rawValue: "stage_error")

        /// Whether `text` can be a code: 1 to 40 of `a-z`, `0-9` and `_`, from a letter (an
        /// exec program's `"code"` is checked against it).
        public static func isWellFormed(_ text: String) -> Bool {
            guard let first = text.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first), text.utf8.count <= 40 else { return false }
            return text.utf8.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_") }
        }

        /// A backup folder `restore` refuses: incomplete (no manifest), damaged (a file's
        /// sha256), or made by a newer photomemo (its schema versions).
        public static let badBackup = Code(rawValue: "bad_backup")
        /// One maintenance run at a time: a `backup` or `verify` is already running.
        public static let busy = Code(rawValue: "busy")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
