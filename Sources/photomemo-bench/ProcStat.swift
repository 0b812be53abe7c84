import Foundation

/// What the bench reads of other processes from /proc: CPU seconds, children.
enum ProcStat {
    /// The name (between the parentheses) and the fields after it of a `stat` file:
    /// "pid (comm) state ppid …", where comm may hold spaces.
    static func read(_ path: String) -> (name: Substring, fields: [Substring])? {
        guard let s = try? String(contentsOfFile: path, encoding: .utf8),
              let open = s.firstIndex(of: "("), let close = s.lastIndex(of: ")") else { return nil }
        return (s[s.index(after: open)..<close], s[s.index(after: close)...].split(separator: " "))
    }

    /// User + system seconds of a `stat` file's process or thread (utime and stime: the
    /// 12th and 13th fields after the name).
    static func cpuSeconds(_ fields: [Substring]) -> Double {
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func cpuSeconds(of pid: pid_t) -> Double { read("/proc/\(pid)/stat").map { cpuSeconds($0.fields) } ?? 0 }

    /// The processes a single-threaded parent started (a postmaster's backends).
    static func children(of pid: pid_t) -> [pid_t] {
        ((try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? "").split(separator: " ").compactMap { pid_t($0) }
    }
}
