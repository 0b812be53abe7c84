import Foundation
import Glibc
import Journal
import StageKit
import Postgres

/// One real daemon (`photomemo serve`, the release binary next to the bench) on a fresh
/// home: photos dropped into its inbox, timed from the first drop until every job is done.
struct DaemonRun {
    struct Result {
        var wall = 0.0, cpu = 0.0
        /// The store server's CPU over the same window (SeaweedFS shares these cores).
        var serverCPU = 0.0
        /// PostgreSQL's (the postmaster and its backends), when the daemon runs on it.
        var databaseCPU = 0.0
        var s3: [String: Int] = [:]
    }

    /// The daemon exited at start (e.g. an engine it does not run on yet).
    struct Refused: Error { let reason: String }

    let binary: String
    let home: String
    let extra: [String]
    let environment: [String: String]
    var pid: pid_t = 0
    var serverPID: pid_t = 0
    var postmasterPID: pid_t = 0
    /// The one CPU the daemon may use (taskset), or any.
    var cpu: Int?

    static let definition = """
        { "name": "bench", "database": "sqlite:photomemo.sqlite", "store": "file:store",
          "stages": [
            {"use": "validate", "with": {"formats": ["jpeg"], "max_bytes": 52428800, "max_pixels": 100000000}},
            {"use": "compress", "with": {"renditions": [
                {"name": "display", "width": 860, "format": "jpeg", "quality": 90},
                {"name": "thumbnail", "fill": [200, 200], "format": "jpeg", "quality": 70}], "strip_gps": true}},
            {"use": "upload", "with": {}},
            {"use": "index", "with": {}}],
          "retry": {"max_attempts": 6, "base_ms": 500, "max_ms": 60000} }
        """

    init(binary: String, home: String, extra: [String], environment: [String: String] = [:]) throws {
        self.binary = binary
        self.home = home
        self.extra = extra
        self.environment = environment
        try FileManager.default.createDirectory(atPath: home + "/staging", withIntermediateDirectories: true)
        try Self.definition.write(toFile: home + "/job.json", atomically: true, encoding: .utf8)
    }

    mutating func start() throws {
        let argv = (cpu.map { ["/usr/bin/taskset", "-c", String($0)] } ?? []) + [binary, "serve", "--home", home, "--job", home + "/job.json"] + extra
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, home + "/daemon.log", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let env = ProcessInfo.processInfo.environment.merging(environment) { _, b in b }.map { "\($0.key)=\($0.value)" }
        let cargs = argv.map { strdup($0) } + [nil], cenv = env.map { strdup($0) } + [nil]
        defer { (cargs + cenv).forEach { free($0) } }
        guard posix_spawn(&pid, argv[0], &actions, nil, cargs, cenv) == 0 else { throw SideBySide.Failure("cannot start \(binary)") }
        // Ready once the control socket answers.
        for _ in 0..<300 {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                pid = 0
                let log = (try? String(contentsOfFile: home + "/daemon.log", encoding: .utf8)) ?? ""
                throw Refused(reason: log.split(separator: "\n").last.map(String.init) ?? "exited at start")
            }
            if (try? client("status")) != nil { return }
            usleep(100_000)
        }
        throw SideBySide.Failure("the daemon did not answer on \(home); see \(home)/daemon.log")
    }

    /// A client command's standard output (throws on a non-zero exit).
    func client(_ command: String) throws -> String {
        let out = home + "/client.out"
        var m = Measurement()
        spawn(["/bin/sh", "-c", "\"$0\" \"$1\" --home \"$2\" > \"$3\" 2>/dev/null", binary, command, home, out], into: &m)
        guard m.failures == 0 else { throw SideBySide.Failure("photomemo \(command) failed") }
        return try String(contentsOfFile: out, encoding: .utf8)
    }

    /// photomemo_store_requests_total by method, from the daemon's metrics.
    func s3Requests() throws -> [String: Int] {
        var out: [String: Int] = [:]
        for line in try client("metrics").split(separator: "\n") where line.hasPrefix("photomemo_store_requests_total{method=\"") {
            let parts = line.dropFirst("photomemo_store_requests_total{method=\"".count).split(separator: "\"")
            if let m = parts.first, let n = Int(parts.last?.split(separator: " ").last ?? "") { out[String(m)] = n }
        }
        return out
    }

    /// User + system seconds of the daemon so far (/proc: the window, not its whole life).
    func cpuSeconds(_ of: pid_t? = nil) -> Double { ProcStat.cpuSeconds(of: of ?? pid) }

    /// A process and its children (PostgreSQL's backends are the postmaster's).
    func treeCPUSeconds(_ root: pid_t) -> Double {
        guard root > 0 else { return 0 }
        return ([root] + ProcStat.children(of: root)).map { ProcStat.cpuSeconds(of: $0) }.reduce(0, +)
    }

    /// Drops `files` (staged on the same file system, then renamed in) and waits until
    /// `finished()` reaches their count.
    func process(_ files: [String], finished: () throws -> Int) throws -> Result {
        var staged: [String] = []
        for (i, f) in files.enumerated() {
            let to = home + "/staging/" + String(format: "photo-%03d.jpg", i)
            try FileManager.default.copyItem(atPath: f, toPath: to)
            staged.append(to)
        }
        let s3Before = try s3Requests()
        let cpu0 = cpuSeconds(), server0 = cpuSeconds(serverPID), db0 = treeCPUSeconds(postmasterPID), t0 = Date()
        for f in staged { rename(f, home + "/inbox/" + (f as NSString).lastPathComponent) }
        while try finished() < files.count {
            if Date().timeIntervalSince(t0) > 600 { throw SideBySide.Failure("jobs not done after 600 s on \(home)") }
            usleep(20_000)
        }
        var r = Result(wall: Date().timeIntervalSince(t0), cpu: cpuSeconds() - cpu0, serverCPU: cpuSeconds(serverPID) - server0,
                       databaseCPU: treeCPUSeconds(postmasterPID) - db0)
        for (m, n) in try s3Requests() { r.s3[m] = n - (s3Before[m] ?? 0) }
        return r
    }

    func stop() {
        guard pid > 0 else { return }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        _ = try? syscall("waitpid", blocking: { waitpid(pid, &status, 0) })
    }
}
