import Foundation

/// Processes pinned to one CPU with taskset(1), every thread (`-a`), so servers on this
/// machine can stand in for servers elsewhere.
enum CPUAffinity {
    static func pin(_ pid: pid_t, cpu: Int) throws {
        var m = Measurement()
        spawn(["/usr/bin/taskset", "-a", "-p", "-c", String(cpu), String(pid)], into: &m)
        guard m.failures == 0 else { throw SideBySide.Failure("taskset could not pin process \(pid) to CPU \(cpu)") }
    }
}
