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
        /// A retried job's photo file is neither where it was taken nor in quarantine.
        public static let photoGone = Code(rawValue: "photo_gone")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
