import Foundation

/// Processes pinned to one CPU with taskset(1), every thread (`-a`), so servers on this
/// machine can stand in for servers elsewhere.
enum CPUAffinity {
    static func pin(_ pid: pid_t, cpu: Int) throws {
        var m = Measurement()
        spawn(["/usr/bin/taskset", "-a", "-p", "-c", String(cpu), String(pid)], into: &m)
        guard m.failures == 0 else { throw SideBySide.Failure("taskset could not pin process \(pid) to CPU \(cpu)") }
    }

    /// The processes whose parent is `pid` (a postmaster's backends and helpers).
    static func children(of pid: pid_t) -> [pid_t] {
        let procs = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return procs.compactMap { name -> pid_t? in
            guard let child = pid_t(name), let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return nil }
            // "pid (comm) state ppid …": comm may hold spaces, so fields start after ")".
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == pid ? child : nil
        }
    }
}
