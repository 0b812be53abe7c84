import Foundation
import StageKit

/// `--cluster`'s table (docs/benchmarks.md), JSON and an SVG of the add → claim latency distribution.
struct ClusterReport {
    let r: ClusterBench.Report

    init(_ r: ClusterBench.Report) { self.r = r }

    func pct(_ p: Double) -> Double {
        r.latency.isEmpty ? .nan : r.latency[min(r.latency.count - 1, Int(Double(r.latency.count) * p))]
    }

    /// Best round of each (fewest seconds), as photos/s and CPU ms per photo.
    func best(_ runs: [DaemonRun.Result]) -> (rate: Double, cpuMs: Double, serverMs: Double, databaseMs: Double) {
        guard let b = runs.min(by: { $0.wall < $1.wall }) else { return (.nan, .nan, .nan, .nan) }
        let n = Double(r.photos)
        return (n / b.wall, b.cpu * 1000 / n, b.serverCPU * 1000 / n, b.databaseCPU * 1000 / n)
    }

    /// PostgreSQL + S3 against SQLite + folder; SQLite + S3 while the daemon cannot run on PostgreSQL.
    var compared: [DaemonRun.Result] { r.remote.isEmpty ? r.sqliteS3 : r.remote }
    var ratio: Double { best(compared).rate / best(r.local).rate }

    func met(_ ok: Bool) -> String { ok ? "met" : "NOT met" }

    func stats(_ s: ClusterBench.Stats) -> JSONValue {
        ["xact_commit": .double(s.xacts), "tup_inserted": .double(s.inserted), "tup_updated": .double(s.updated)]
    }

    func print(json: Bool, svg: String) throws {
        let local = best(r.local), s3 = best(r.sqliteS3), remote = best(r.remote)
        let p50 = pct(0.5), p99 = pct(0.99), max = r.latency.last ?? .nan
        try chart().write(toFile: svg, atomically: true, encoding: .utf8)
        if json {
            Swift.print(JSONValue.object([
                "date": .string(isoTimestamp(unixNow())), "cores": .int(Int64(ProcessInfo.processInfo.activeProcessorCount)), "uptime": .string(r.uptime),
                "claims_per_s": ["postgres": .double(r.pg.claims), "sqlite": .double(r.sqlite.claims)],
                "claim_record_per_s": ["postgres": .double(r.pg.claimRecord), "sqlite": .double(r.sqlite.claimRecord)],
                "writer_txns_per_s": ["postgres": .double(r.pg.writerTxns), "sqlite": .double(r.sqlite.writerTxns)],
                "notify_latency_ms": ["p50": .double(p50), "p99": .double(p99), "max": .double(max), "samples": .int(Int64(r.latency.count)),
                                      "commit_p50": .double(r.commitMs), "claim_after_wake_p50": .double(r.claimMs)],
                "prototype_set_based": ["claims_per_s": .double(r.proto.claims), "claim_record_per_s": .double(r.proto.claimRecord)],
                "photos": .int(Int64(r.photos)), "rounds": .int(Int64(r.local.count)),
                "photos_per_s": ["sqlite_local": .double(local.rate), "sqlite_s3": .double(s3.rate), "postgres_s3": .double(remote.rate), "ratio": .double(ratio)],
                "cpu_ms_per_photo": ["sqlite_local": .double(local.cpuMs), "sqlite_s3": .double(s3.cpuMs), "postgres_s3": .double(remote.cpuMs)],
                "seaweedfs_cpu_ms_per_photo": ["sqlite_s3": .double(s3.serverMs), "postgres_s3": .double(remote.serverMs)],
                "postgres_cpu_ms_per_photo": .double(remote.databaseMs),
                "photos_per_s_each_round": ["sqlite_local": .array(r.local.map { .double(Double(r.photos) / $0.wall) }),
                                            "sqlite_s3": .array(r.sqliteS3.map { .double(Double(r.photos) / $0.wall) }),
                                            "postgres_s3": .array(r.remote.map { .double(Double(r.photos) / $0.wall) })],
                "postgres_daemon_refused": r.refused.map(JSONValue.string) ?? .null,
                "journal_per_photo": stats(r.journalPerPhoto),
                "daemon_per_photo": r.daemonPerPhoto.map(stats) ?? .null,
                "s3_requests_per_photo": .object(r.s3PerPhoto.mapValues { .double($0) }),
                "statements_per_photo": .object(r.locks.mapValues { .double($0) }),
                "svg": .string(svg),
            ]).jsonString)
            return
        }
        Swift.print("cluster: \(isoTimestamp(unixNow())), \(ProcessInfo.processInfo.activeProcessorCount) cores, \(r.uptime)")
        Swift.print("PostgreSQL 15 and SeaweedFS on loopback; daemon: \(r.photos) photos of 12 MP, best of \(r.local.count) interleaved rounds")
        if r.elsewhere {
            Swift.print("servers elsewhere: each daemon pinned to CPU 0; PostgreSQL (durable: fsync on), SeaweedFS and the bench to CPU 1 (queue measurements skipped)")
        }
        Swift.print("```")
        if !r.elsewhere { printQueue(p50: p50, p99: p99, max: max) }
        printDaemons(local: local, s3: s3, remote: remote)
        Swift.print("```")
        Swift.print("chart: \(svg)")
    }

    func printQueue(p50: Double, p99: Double, max: Double) {
        Swift.print("measure                                      PostgreSQL     SQLite   target")
        func row(_ name: String, _ pg: Double, _ sq: Double, _ target: String) {
            Swift.print(name.padding(toLength: 42, withPad: " ", startingAt: 0) + String(format: "%12.0f %10.0f   ", pg, sq) + target)
        }
        row("claims/s, batches of 64, 2 hosts", r.pg.claims, r.sqlite.claims, "≥ 10,000: \(met(r.pg.claims >= 10_000))")
        row("claim + record (advance)/s, batches of 64", r.pg.claimRecord, r.sqlite.claimRecord, "")
        row("write transactions/s, 1 job each, 2 hosts", r.pg.writerTxns, r.sqlite.writerTxns, "(the one locked writer)")
        Swift.print(String(format: "prototype set-based claim (1 statement/batch): %.0f claims/s, %.0f claim + record/s (bench SQL, not the engine)",
                           r.proto.claims, r.proto.claimRecord))
        Swift.print(String(format: "add → claim via NOTIFY (%d samples)          p50 %.2f ms  p99 %.2f ms  max %.2f ms   ≤ 5 ms p50: %@",
                           r.latency.count, p50, p99, max, met(p50 <= 5)))
        Swift.print(String(format: "  medians of its parts: the adder's commit %.2f ms, the idle host's claim after waking %.2f ms", r.commitMs, r.claimMs))
    }

    func printDaemons(local: (rate: Double, cpuMs: Double, serverMs: Double, databaseMs: Double),
                      s3: (rate: Double, cpuMs: Double, serverMs: Double, databaseMs: Double),
                      remote: (rate: Double, cpuMs: Double, serverMs: Double, databaseMs: Double)) {
        Swift.print("daemon per host                   photos/s (best; each round)   CPU ms/photo: daemon  SeaweedFS  PostgreSQL")
        func daemon(_ name: String, _ b: (rate: Double, cpuMs: Double, serverMs: Double, databaseMs: Double), _ runs: [DaemonRun.Result]) {
            let each = runs.map { String(format: "%.1f", Double(r.photos) / $0.wall) }.joined(separator: " ")
            Swift.print(name.padding(toLength: 30, withPad: " ", startingAt: 0) + String(format: "%8.2f; ", b.rate)
                + each.padding(toLength: 20, withPad: " ", startingAt: 0) + String(format: "%19.0f %10.0f %11.0f", b.cpuMs, b.serverMs, b.databaseMs))
        }
        daemon("  SQLite + local folder", local, r.local)
        daemon("  SQLite + S3", s3, r.sqliteS3)
        if let why = r.refused { Swift.print("  PostgreSQL + S3                 not runnable yet: \(why)") } else { daemon("  PostgreSQL + S3", remote, r.remote) }
        Swift.print(String(format: "  ratio %@ / SQLite + folder: %.2fx   ≥ 0.95x: %@", r.remote.isEmpty ? "SQLite + S3" : "PostgreSQL + S3", ratio,
                           r.remote.isEmpty ? "not measurable (PostgreSQL daemon)" : met(ratio >= 0.95)))
        if !r.remote.isEmpty {
            Swift.print(String(format: "  the database's share: PostgreSQL + S3 / SQLite + S3: %.2fx; the store's: SQLite + S3 / SQLite + folder: %.2fx",
                               remote.rate / s3.rate, s3.rate / local.rate))
        }
        Swift.print("S3 requests per photo (daemon metrics): " + r.s3PerPhoto.sorted { $0.key < $1.key }.map { String(format: "%.1f %@", $0.value, $0.key) }.joined(separator: ", "))
        guard !r.elsewhere else { return }
        let j = r.journalPerPhoto
        Swift.print(String(format: "journal per photo on PostgreSQL (4 stages, 1 job a claim): %.1f transactions, %.1f rows inserted, %.1f updated",
                           j.xacts, j.inserted, j.updated))
        if let d = r.daemonPerPhoto {
            Swift.print(String(format: "daemon per photo on PostgreSQL (net of an idle daemon, %.1f s): %.1f transactions, %.1f inserted, %.1f updated",
                               r.idleSeconds, d.xacts, d.inserted, d.updated))
        }
        if !r.locks.isEmpty {
            Swift.print("per photo, counted in a logged run: " + r.locks.sorted { $0.key < $1.key }.map { String(format: "%.1f %@", $0.value, $0.key) }
                .joined(separator: ", ") + " (each lock, one locked transaction)")
        }
    }
}
