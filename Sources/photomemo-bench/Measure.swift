import Foundation
import Glibc
import StageKit

/// One measured run: wall time, CPU time (user + system) and peak RSS of the child
/// processes it spawned, read from wait4's rusage.
struct Measurement {
    var wall: Double = 0
    var cpu: Double = 0
    var peakRSSKB: Int = 0
    var failures = 0
}

/// Runs `argv` under GNU time and adds its wall time, CPU time and peak RSS to `m`.
/// The peak RSS is GNU time's (not wait4's: a child spawned with vfork semantics inherits
/// the parent's RSS high-water mark until exec, which would report the bench's own size
/// for every tool). The CPU is wait4's, in microseconds, of GNU time and the tool (GNU
/// time's own ~1 ms included): GNU time prints hundredths cut short, which took 6-9 ms
/// off every 60-90 ms run of a tool started once a photo.
func measure(_ argv: [String], into m: inout Measurement, quiet: Bool = true) {
    let report = NSTemporaryDirectory() + "photomemo-bench-time-\(getpid())"
    defer { unlink(report) }
    var inner = Measurement()
    let usage = spawn(["/usr/bin/time", "-f", "%e %M", "-o", report] + argv, into: &inner, quiet: quiet)
    let fields = ((try? String(contentsOfFile: report, encoding: .utf8)) ?? "").split(whereSeparator: \.isWhitespace)
        .suffix(2).compactMap { Double($0) }
    guard fields.count == 2 else { m.failures += 1; return }
    m.wall += fields[0]
    m.cpu += usage.cpuSeconds
    m.peakRSSKB = max(m.peakRSSKB, Int(fields[1]))
    m.failures += inner.failures
}

/// Runs `argv` itself and adds its wall and CPU time (wait4's, in microseconds) to `m`:
/// the tool's own CPU and nothing else, for a floor taken one short run a photo. No
/// peak RSS (see `measure`).
func measureCPU(_ argv: [String], into m: inout Measurement) {
    var clock = timespec(), end = timespec()
    clock_gettime(CLOCK_MONOTONIC, &clock)
    let usage = spawn(argv, into: &m)
    clock_gettime(CLOCK_MONOTONIC, &end)
    m.wall += Double(end.tv_sec - clock.tv_sec) + Double(end.tv_nsec - clock.tv_nsec) / 1e9
    m.cpu += usage.cpuSeconds
}

extension rusage {
    /// User + system seconds.
    var cpuSeconds: Double {
        Double(ru_utime.tv_sec + ru_stime.tv_sec) + Double(ru_utime.tv_usec + ru_stime.tv_usec) / 1e6
    }
}

/// Spawns `argv` (PATH searched) and waits; counts a failure on a non-zero exit. Returns
/// the child's resource use (its own and its waited-for children's).
@discardableResult
func spawn(_ argv: [String], into m: inout Measurement, quiet: Bool = true) -> rusage {
    var pid: pid_t = 0
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if quiet {
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    }
    let args = argv.map { strdup($0) } + [nil]
    defer { args.forEach { free($0) } }
    var usage = rusage()
    guard posix_spawnp(&pid, argv[0], &actions, nil, args, environ) == 0 else { m.failures += 1; return usage }
    var status: Int32 = 0
    _ = try? syscall("wait4", blocking: { wait4(pid, &status, 0, &usage) })
    if status != 0 { m.failures += 1 }
    return usage
}

/// Resident set size of this process now, in KB (from /proc).
func currentRSSKB() -> Int {
    guard let s = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = s.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
    return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
}

func which(_ program: String) -> String? {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let p = "\(dir)/\(program)"
        if FileManager.default.isExecutableFile(atPath: p) { return p }
    }
    return nil
}
