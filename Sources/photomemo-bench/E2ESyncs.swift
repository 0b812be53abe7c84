import Foundation
import Glibc

extension E2E {
    /// The journal's write transactions (all, and those that waited for the disk) from
    /// the daemon's metrics; nil from a build without the counter.
    static func journalTransactions(_ d: BenchDaemon) -> (all: Double, durable: Double)? {
        guard let text = try? String(decoding: d.cli(["metrics"]), as: UTF8.self) else { return nil }
        var durable: Double?, relaxed: Double?
        for line in text.split(separator: "\n") where line.hasPrefix("photomemo_journal_transactions_total{") {
            let v = Double(line.split(separator: " ").last ?? "")
            if line.contains("durable=\"true\"") { durable = v } else { relaxed = v }
        }
        guard let durable, let relaxed else { return nil }
        return (durable + relaxed, durable)
    }

    /// fsync + fdatasync calls per photo of one pass (every thread of the daemon, strace
    /// attached once it answers: start-up's are not counted, the stop's are), or nil
    /// without strace. A pass of its own: strace slows the daemon, so it is not timed.
    static func syncsPerPhoto(_ files: [String], home: String, binary: String) throws -> Double? {
        guard let strace = which("strace") else { return nil }
        let d = try BenchDaemon(home: home, binary: binary)
        for (i, f) in files.enumerated() { try d.stage(f, as: String(format: "p%05d.jpg", i)) }
        try d.start()
        let out = home + "/strace.txt"
        var tracer: pid_t = 0
        let argv = [strace, "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", out, "-p", String(d.pid)]
        let cargs = argv.map { strdup($0) } + [nil]
        defer { cargs.forEach { free($0) } }
        guard posix_spawn(&tracer, strace, nil, nil, cargs, environ) == 0 else { d.stop(); return nil }
        usleep(500_000)  // attached to every thread
        for i in files.indices { try d.drop(String(format: "p%05d.jpg", i)) }
        var ended = (done: 0, failed: 0)
        while ended.done + ended.failed < files.count {
            usleep(50_000)
            ended = try d.finished()
        }
        d.stop()
        var status: Int32 = 0
        _ = waitpid(tracer, &status, 0)
        let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        let calls = text.split(separator: "\n").compactMap { line -> Int? in
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let name = f.last, name == "fsync" || name == "fdatasync", f.count >= 5 else { return nil }
            return Int(f[3])
        }
        return calls.isEmpty ? nil : Double(calls.reduce(0, +)) / Double(files.count)
    }
}
