import Foundation
import SQLite
import Postgres
import Journal
import StageKit
import TestSupport
import Testing

/// A real `photomemo serve` process on a temp home, with the test stage and helpers to
/// drop files, append lines, read the journal and kill it.
final class DaemonHarness {
    let root: String
    let home: String
    let effects: String
    let jobFile: String
    var process: Process?
    /// A `postgres://` URL the daemon is started on (`--database`); nil: the home's SQLite file.
    var database: String?
    /// An S3 server the daemon stores assets in (`--store`); nil: the home's folder.
    var s3: SeaweedFS?
    /// `PHOTOMEMO_TEST_BACKEND=postgres+s3` runs every harness on a fresh PostgreSQL
    /// database and its own S3 bucket: the switch that runs the seed scenarios on the
    /// engines several hosts share (`scripts/test` runs them once more with it).
    static let sharedEngines = ProcessInfo.processInfo.environment["PHOTOMEMO_TEST_BACKEND"] == "postgres+s3"
    var logPath: String { root + "/daemon-\(starts).log" }
    private(set) var starts = 0

    init(stages: String? = nil) throws {
        root = NSTemporaryDirectory() + "pm-it-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        home = root + "/home"
        effects = root + "/effects"
        jobFile = root + "/job.json"
        try FileManager.default.createDirectory(atPath: effects + "/done", withIntermediateDirectories: true)
        let script = packageRoot.appendingPathComponent("Tests/IntegrationTests/Fixtures/effect-stage.sh").path
        let definition = stages ?? """
            {"name": "test", "stages": [
              {"use": "validate", "with": {}},
              {"use": "exec", "with": {"command": ["\(script)"], "timeout_ms": 20000, "pass_env": ["EFFECTS", "EFFECT_SLEEP"]}, "concurrency": 4}],
             "retry": {"max_attempts": 4, "base_ms": 50, "max_ms": 200}}
            """
        try definition.write(toFile: jobFile, atomically: true, encoding: .utf8)
        if Self.sharedEngines {
            database = try PostgresServer.freshDatabase()
            s3 = try SeaweedFS()
        }
    }

    deinit {
        if let p = process, p.isRunning { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        try? FileManager.default.removeItem(atPath: root)
    }

    static var binary: String {
        ProcessInfo.processInfo.environment["PHOTOMEMO_BIN"] ?? packageRoot.appendingPathComponent(".build/debug/photomemo").path
    }

    /// Runs `photomemo ARGS` to completion: (exit status, stdout, stderr).
    static func run(_ args: [String]) throws -> (Int32, String, String) { try spawn([binary] + args) }

    /// Runs `argv` as another Unix user (and group) through runuser: (exit status, stdout, stderr).
    static func run(as user: String, group: String? = nil, _ argv: [String]) throws -> (Int32, String, String) {
        try spawn(["/usr/sbin/runuser", "-u", user] + (group.map { ["-g", $0] } ?? []) + ["--"] + argv)
    }

    static func spawn(_ argv: [String]) throws -> (Int32, String, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: argv[0])
        p.arguments = Array(argv.dropFirst())
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    /// `launcher`: a command that execs the daemon in its own process (`prlimit ...`).
    func start(env extra: [String: String] = [:], args: [String] = [], launcher: [String] = []) throws {
        starts += 1
        let p = Process()
        p.executableURL = URL(fileURLWithPath: launcher.first ?? Self.binary)
        p.arguments = Array(launcher.dropFirst()) + (launcher.isEmpty ? [] : [Self.binary]) + ["serve", "--home", home, "--job", jobFile, "--log-level", "info", "--settle", "0.3"]
                      + (args.contains("--rescan-interval") ? [] : ["--rescan-interval", "2"]) + (args.contains("--grace") ? [] : ["--grace", "10"])
                      + (database.map { ["--database", $0] } ?? []) + (s3.map { ["--store", $0.storeURL] } ?? []) + args
        var env = ProcessInfo.processInfo.environment
        env["EFFECTS"] = effects
        for (k, v) in s3?.environment ?? [:] { env[k] = v }
        env.removeValue(forKey: "PHOTOMEMO_FAILPOINTS")
        for (k, v) in extra { env[k] = v }
        p.environment = env
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        p.standardError = FileHandle(forWritingAtPath: logPath)
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        process = p
        try waitUntil("the daemon is up") { FileManager.default.fileExists(atPath: self.home + "/photomemo.lock") && self.log.contains("serving") }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Sends `signal` and waits for the process to end; returns how it ended.
    @discardableResult
    func stop(_ signal: Int32 = SIGTERM) -> (status: Int32, reason: Process.TerminationReason) {
        guard let p = process else { return (0, .exit) }
        if p.isRunning { kill(p.processIdentifier, signal) }
        p.waitUntilExit()
        process = nil
        return (p.terminationStatus, p.terminationReason)
    }

    /// Waits for a process that kills itself (a failpoint).
    func waitForExit(timeout: Double = 30) throws -> (status: Int32, reason: Process.TerminationReason) {
        let p = try #require(process)
        try waitUntil("the daemon exits", timeout: timeout) { !p.isRunning }
        process = nil
        return (p.terminationStatus, p.terminationReason)
    }

    // MARK: inputs

    /// The way DESIGN.md tells users to drop a photo: write a hidden temp name, rename in.
    func drop(_ photo: String, as name: String? = nil) throws {
        let target = name ?? photo
        let tmp = home + "/inbox/.\(target).part"
        try FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent(photo).path, toPath: tmp)
        chmod(tmp, 0o644)
        rename(tmp, home + "/inbox/" + target)
    }

    /// Writes a file in place in chunks with pauses, as a slow `cp` or camera upload would.
    func writeInPlace(_ bytes: Data, as name: String, chunks: Int = 4, pause: Double = 0.15) throws {
        let fd = open(home + "/inbox/" + name, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        precondition(fd >= 0)
        let size = (bytes.count + chunks - 1) / chunks
        for i in 0..<chunks {
            let part = bytes.subdata(in: min(i * size, bytes.count)..<min((i + 1) * size, bytes.count))
            _ = part.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            Thread.sleep(forTimeInterval: pause)
        }
        close(fd)
    }

    func append(_ text: String) throws {
        let path = home + "/queue.jsonl"
        if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try h.seekToEnd()
        try h.write(contentsOf: Data(text.utf8))
        try h.close()
    }

    // MARK: observations

    /// The journal, to read: the home's SQLite file, or the shared PostgreSQL database.
    func journalDB() throws -> any SQLConnection {
        if let database { return try PostgresDatabase(url: database) }
        return try Database(path: home + "/photomemo.sqlite", readOnly: true)
    }

    /// (state, count) from the journal, read-only.
    func stateCounts() throws -> [String: Int] {
        let db = try journalDB()
        var out: [String: Int] = [:]
        for r in try db.query("SELECT state, count(*) FROM jobs GROUP BY state") { out[r.string(0)!] = Int(r.int(1)!) }
        return out
    }

    func jobs(_ whereClause: String = "TRUE") throws -> [(id: Int64, state: String, photo: String?, error: String?, results: String, memo: String)] {
        let db = try journalDB()
        return try db.query("SELECT id, state, photo, error, results, memo FROM jobs WHERE \(whereClause) ORDER BY id").map {
            ($0.int(0)!, $0.string(1)!, $0.string(2), $0.string(3), $0.string(4)!, $0.string(5)!)
        }
    }

    func lines(_ file: String) -> [String] {
        ((try? String(contentsOfFile: effects + "/" + file, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    func quarantined() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: home + "/quarantine")) ?? []).filter { !$0.hasSuffix(".reason.json") }.sorted()
    }

    func waitUntil(_ what: String, timeout: Double = 30, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if (try? condition()) == true { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        if try condition() { return }
        Issue.record("timed out waiting for \(what); daemon log:\n\(log.suffix(3000))")
        throw CancellationError()
    }

    /// Waits until no job is queued, running or waiting and `expected` jobs exist.
    func waitIdle(jobs expected: Int, timeout: Double = 60) throws {
        try waitUntil("\(expected) jobs settled", timeout: timeout) {
            let c = try self.stateCounts()
            return c.values.reduce(0, +) == expected && (c["queued"] ?? 0) + (c["running"] ?? 0) + (c["waiting"] ?? 0) == 0
        }
    }
}

extension DaemonHarness {
    /// Whether the store in use (the home's folder, or S3 under `PHOTOMEMO_TEST_BACKEND=postgres+s3`) holds `key`.
    func storeHolds(_ key: String) -> Bool {
        if let s3 { return s3.fetchWithCurl("pm/" + key) != nil }
        return FileManager.default.fileExists(atPath: home + "/store/" + key)
    }
}

/// Runs `photomemo ARGS --home HOME --json` against the harness's daemon, expects exit 0
/// and returns the parsed result.
func json(_ d: DaemonHarness, _ args: [String]) throws -> JSONValue {
    let (status, out, err) = try DaemonHarness.run(args + ["--home", d.home, "--json"])
    #expect(status == 0, "\(args): \(err)")
    return try JSONValue.parse(out)
}
