import Foundation
import Glibc
import StageKit

/// Everything the CLI prints goes through here: unbuffered writes (a stream's line is
/// flushed at once), colour only on a TTY without `NO_COLOR`, aligned tables.
enum Output {
    static let isTTY = isatty(1) != 0
    static let color = isTTY && ProcessInfo.processInfo.environment["NO_COLOR"] == nil

    static func line(_ s: String = "") { write(s + "\n") }

    static func write(_ s: String) { StandardStream.out(s) }

    static func json(_ v: JSONValue) { line(v.jsonString) }

    /// Text that came from someone else (a file name, a memo, a field, a receiver's
    /// answer), with control characters escaped: a user's newline must not forge a row of
    /// an admin's table, nor an escape sequence clear or retitle their terminal.
    static func text(_ s: String) -> String { Log.oneLine(s) }
    static func text(_ v: JSONValue?) -> String? { v.map { text($0.stringValue ?? $0.jsonString) } }

    enum Tint: String { case red = "31", green = "32", yellow = "33", blue = "34", dim = "2", bold = "1" }

    static func tint(_ s: String, _ t: Tint) -> String { color ? "\u{1B}[\(t.rawValue)m\(s)\u{1B}[0m" : s }

    /// Columns padded to their widest cell; the header dimmed.
    static func table(_ header: [String], _ rows: [[String]]) {
        var widths = header.map(\.count)
        for r in rows { for (i, c) in r.enumerated() where i < widths.count { widths[i] = max(widths[i], c.count) } }
        func render(_ r: [String]) -> String {
            r.enumerated().map { i, c in i == r.count - 1 ? c : c.padding(toLength: widths[i], withPad: " ", startingAt: 0) }
                .joined(separator: "  ")
        }
        line(tint(render(header), .dim))
        for r in rows { line(render(r)) }
    }

    static func bar(_ fraction: Double, width: Int = 30) -> String {
        let f = max(0, min(1, fraction))
        let full = Int((f * Double(width)).rounded())
        return "[" + String(repeating: "█", count: full) + String(repeating: "░", count: width - full) + "]"
    }

    static func ms(_ v: JSONValue?) -> String {
        guard let d = v?.doubleValue else { return "-" }
        return d < 10 ? String(format: "%.1f ms", d) : String(format: "%.0f ms", d)
    }

    static func duration(_ seconds: Double) -> String {
        let s = Int(seconds)
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m\(s % 60)s" }
        return "\(s / 3600)h\(s % 3600 / 60)m"
    }
}
