import Foundation
import Glibc

/// One measured run: wall time, CPU time (user + system) and peak RSS of the child
/// processes it spawned, read from wait4's rusage.
struct Measurement {
    var wall: Double = 0
    var cpu: Double = 0
    var peakRSSKB: Int = 0
    var failures = 0
}

/// Runs `argv` under GNU time and adds its wall time, CPU time and peak RSS to `m`.
/// (Not wait4's rusage: a child spawned with vfork semantics inherits the parent's RSS
/// high-water mark until exec, which would report the bench's own size for every tool.)
func measure(_ argv: [String], into m: inout Measurement, quiet: Bool = true) {
    let report = NSTemporaryDirectory() + "photomemo-bench-time-\(getpid())"
    defer { unlink(report) }
    var inner = Measurement()
    spawn(["/usr/bin/time", "-f", "%e %U %S %M", "-o", report] + argv, into: &inner, quiet: quiet)
    let fields = ((try? String(contentsOfFile: report, encoding: .utf8)) ?? "").split(whereSeparator: \.isWhitespace)
        .suffix(4).compactMap { Double($0) }
    guard fields.count == 4 else { m.failures += 1; return }
    m.wall += fields[0]
    m.cpu += fields[1] + fields[2]
    m.peakRSSKB = max(m.peakRSSKB, Int(fields[3]))
    m.failures += inner.failures
}

/// Spawns `argv` (PATH searched) and waits; counts a failure on a non-zero exit.
func spawn(_ argv: [String], into m: inout Measurement, quiet: Bool = true) {
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
    guard posix_spawnp(&pid, argv[0], &actions, nil, args, environ) == 0 else { m.failures += 1; return }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    if status != 0 { m.failures += 1 }
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
