import ControlProtocol
import Foundation
import Glibc
import StageKit

/// A real `photomemo serve` in a scratch home, for the end-to-end bench: its CPU and RSS
/// from /proc (so only the daemon counts, not the bench or the CLI), its metrics through
/// the CLI as a user would see them, and its status on one socket connection kept open:
/// a CLI process per poll cost the machine ~3% of its CPU while it was measured.
final class BenchDaemon {
    let home: String
    let binary: String
    private(set) var pid: pid_t = 0
    /// More `serve` arguments (`--socket-group G`, `--job FILE`).
    var serveArgs: [String] = []
    private lazy var control = ControlClient(socketPath: home + "/photomemo.sock", home: home)

    init(home: String, binary: String) throws {
        self.home = home
        self.binary = binary
        try? FileManager.default.removeItem(atPath: home)
        try FileManager.default.createDirectory(atPath: home + "/inbox", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: home + "/staging", withIntermediateDirectories: true)
    }

    func start() throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, home + "/daemon.log", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, home + "/daemon.log", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        let argv = [binary, "serve", "--home", home] + serveArgs
        let args = argv.map { strdup($0) } + [nil]
        defer { args.forEach { free($0) } }
        guard posix_spawn(&pid, binary, &actions, nil, args, environ) == 0 else { throw Failure("cannot start \(binary)") }
        for _ in 0..<200 {  // up to 20 s (a cold libvips start on a busy machine)
            if (try? status()) != nil { return }
            usleep(100_000)
        }
        throw Failure("photomemo did not answer on \(home) (see \(home)/daemon.log)")
    }

    /// TERM and wait; the daemon lets running stages finish.
    func stop() {
        guard pid > 0 else { return }
        kill(pid, SIGTERM)
        var st: Int32 = 0
        _ = try? syscall("waitpid", blocking: { waitpid(pid, &st, 0) })
        pid = 0
    }

    /// The CLI's output for `args` (the daemon's reply's result with --json).
    func cli(_ args: [String]) throws -> Data {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = args + ["--home", home]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw Failure("photomemo \(args.joined(separator: " ")) failed") }
        return data
    }

    func status() throws -> JSONValue { try control.request(.status, timeoutMs: 10_000) }

    /// Jobs that have ended (done or failed).
    func finished() throws -> (done: Int, failed: Int) {
        let jobs = try status()["jobs"]
        return (Int(jobs?["done"]?.intValue ?? 0), Int(jobs?["failed"]?.intValue ?? 0))
    }

    /// Bytes the daemon has hashed so far (`photomemo_sha256_bytes_total`).
    func hashedBytes() throws -> Int64 {
        let text = String(decoding: try cli(["metrics"]), as: UTF8.self)
        let line = text.split(separator: "\n").first { $0.hasPrefix("photomemo_sha256_bytes_total ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int64($0) } ?? 0
    }

    /// CPU seconds per stage from `metrics` (`photomemo_stage_cpu_seconds_total`).
    func stageCPU() throws -> [String: Double] {
        let text = String(decoding: try cli(["metrics"]), as: UTF8.self)
        var out: [String: Double] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("photomemo_stage_cpu_seconds_total{") {
            guard let s = line.range(of: "stage=\""), let e = line[s.upperBound...].firstIndex(of: "\""),
                  let v = Double(line.split(separator: " ").last ?? "") else { continue }
            out[String(line[s.upperBound..<e])] = v
        }
        return out
    }

    /// User + system CPU seconds of the daemon so far (all its threads).
    var cpuSeconds: Double { ProcStat.cpuSeconds(of: pid) }

    /// CPU seconds of the daemon's threads whose name starts with `prefix` ("libvips worker":
    /// compress's pixels are computed there, off the stage's own thread).
    func threadCPU(named prefix: String) -> Double {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.compactMap { ProcStat.read("/proc/\(pid)/task/\($0)/stat") }.filter { $0.name.hasPrefix(prefix) }
            .map { ProcStat.cpuSeconds($0.fields) }.reduce(0, +)
    }

    var rssKB: Int { status(kB: "VmRSS:") }
    /// The daemon's peak RSS so far (the kernel's high-water mark).
    var peakRSSKB: Int { status(kB: "VmHWM:") }

    private func status(kB field: String) -> Int {
        guard let s = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = s.split(separator: "\n").first(where: { $0.hasPrefix(field) }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }

    /// A photo copied to staging/ beforehand, so dropping it is one rename (as a careful producer does).
    func stage(_ file: String, as name: String, unique: Int? = nil) throws {
        var bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        if let unique {
            // A JPEG comment after SOI: the same picture, other bytes (not a duplicate).
            var com: [UInt8] = [0xFF, 0xFE, 0x00, 0x0A]
            withUnsafeBytes(of: UInt64(unique).bigEndian) { com += $0 }
            bytes.insert(contentsOf: com, at: 2)
        }
        try bytes.write(to: URL(fileURLWithPath: home + "/staging/" + name))
    }

    func drop(_ name: String) throws {
        do { try syscall("rename", blocking: { rename(home + "/staging/" + name, home + "/inbox/" + name) }) } catch let e as SystemError {
            throw Failure("cannot drop \(name): \(e.reason)")
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ d: String) { description = d }
    }
}
