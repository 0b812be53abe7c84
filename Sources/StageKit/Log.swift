import Foundation

/// One line per event to stderr: `time level [job=N] [stage=S] message`. Quiet by default
/// (warnings and errors); `--verbose` or `PHOTOMEMO_LOG=info|debug` shows more.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case debug, info, notice, warning, error

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }

    public init?(name: String) {
        guard let l = LogLevel.allCases.first(where: { "\($0)" == name.lowercased() }) else { return nil }
        self = l
    }
}

public enum Log {
    public enum Format: Sendable { case text, json }

    private static let state = LockedValue(LogLevel.warning)
    private static let formatState = LockedValue(Format.text)

    public static var format: Format {
        get { formatState.value }
        set { formatState.value = newValue }
    }

    public static var level: LogLevel {
        get { state.value }
        set { state.value = newValue }
    }

    public static func log(_ level: LogLevel, _ message: @autoclosure () -> String, job: Int64? = nil, stage: String? = nil) {
        guard level >= Self.level else { return }
        var line: String
        if format == .json {
            var o: [String: JSONValue] = ["time": .string(timestamp()), "level": .string("\(level)"), "message": .string(message())]
            if let job { o["job"] = .int(job) }
            if let stage { o["stage"] = .string(stage) }
            line = JSONValue.object(o).jsonString + "\n"
        } else {
            line = "\(timestamp()) \(level)"
            if let job { line += " job=\(job)" }
            if let stage { line += " stage=\(stage)" }
            line += " " + oneLine(message()) + "\n"
        }
        StandardStream.err(line)
    }

    /// A message as one line: control characters (a file name may hold a newline) are
    /// shown escaped, so no one can forge a log line through a name or a memo.
    /// Control characters (C0, DEL and C1) escaped, so text from outside (a receiver's
    /// answer, a file name) can neither break a line nor drive a terminal; a NUL can then
    /// be stored too (PostgreSQL refuses it in text).
    public static func oneLine(_ text: String) -> String {
        func control(_ s: Unicode.Scalar) -> Bool { s.value < 0x20 || (0x7F...0x9F).contains(s.value) }
        guard text.unicodeScalars.contains(where: control) else { return text }
        var out = ""
        for s in text.unicodeScalars {
            switch s {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where control(s): out += "\\x" + String(s.value, radix: 16, uppercase: true)
            default: out.unicodeScalars.append(s)
            }
        }
        return out
    }

    public static func debug(_ m: @autoclosure () -> String, job: Int64? = nil, stage: String? = nil) { log(.debug, m(), job: job, stage: stage) }
    public static func info(_ m: @autoclosure () -> String, job: Int64? = nil, stage: String? = nil) { log(.info, m(), job: job, stage: stage) }
    public static func notice(_ m: @autoclosure () -> String, job: Int64? = nil, stage: String? = nil) { log(.notice, m(), job: job, stage: stage) }
    public static func warning(_ m: @autoclosure () -> String, job: Int64? = nil, stage: String? = nil) { log(.warning, m(), job: job, stage: stage) }
    public static func error(_ m: @autoclosure () -> String, job: Int64? = nil, stage: String? = nil) { log(.error, m(), job: job, stage: stage) }

    static func timestamp() -> String {
        let now = Date().timeIntervalSince1970
        return isoTimestamp(now)
    }
}

/// `2026-11-29T12:00:00.123Z` for a Unix time in seconds.
public func isoTimestamp(_ t: Double) -> String {
    var secs = time_t(t.rounded(.down))
    var tm = tm()
    gmtime_r(&secs, &tm)
    let ms = Int((t - t.rounded(.down)) * 1000)
    // Hand-padded: String(format:) is slow enough to show in the index's write path.
    func pad(_ v: Int32, _ width: Int) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }
    return pad(tm.tm_year + 1900, 4) + "-" + pad(tm.tm_mon + 1, 2) + "-" + pad(tm.tm_mday, 2) + "T" + pad(tm.tm_hour, 2) + ":"
        + pad(tm.tm_min, 2) + ":" + pad(tm.tm_sec, 2) + "." + pad(Int32(ms), 3) + "Z"
}

/// Unix time in seconds as a Double (the journal's clock).
public func unixNow() -> Double { Date().timeIntervalSince1970 }
