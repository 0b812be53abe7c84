import Foundation
import Journal
import StageKit
import Postgres

/// `--cluster`: issue #15's numbers in one run against a throwaway PostgreSQL 15 and
/// SeaweedFS on loopback (scripts/postgres, scripts/seaweedfs), SQLite alongside.
enum ClusterBench {
    enum Config: String { case local = "SQLite + local folder", sqliteS3 = "SQLite + S3", postgresS3 = "PostgreSQL + S3" }

    struct Stats {
        var xacts = 0.0, inserted = 0.0, updated = 0.0
        func minus(_ o: Stats) -> Stats { Stats(xacts: xacts - o.xacts, inserted: inserted - o.inserted, updated: updated - o.updated) }
        func scaled(_ k: Double) -> Stats { Stats(xacts: xacts * k, inserted: inserted * k, updated: updated * k) }
    }

    struct Report {
        var pg = ClaimBench.Rates(), sqlite = ClaimBench.Rates()
        var latency: [Double] = [], commitMs = 0.0, claimMs = 0.0
        var proto = (claims: 0.0, claimRecord: 0.0)
        var local: [DaemonRun.Result] = [], sqliteS3: [DaemonRun.Result] = [], remote: [DaemonRun.Result] = []
        /// Why the daemon would not run on PostgreSQL, when it would not.
        var refused: String?
        var photos = 0
        var journalPerPhoto = Stats(), daemonPerPhoto: Stats?, idle = Stats(), idleSeconds = 0.0
        var s3PerPhoto: [String: Double] = [:]
        /// Advisory-lock acquisitions by lock and journal claims, per photo (LockCount).
        var locks: [String: Double] = [:]
        var uptime = ""
        /// `--servers-elsewhere`: the daemon on CPU 0, the servers and the bench on CPU 1.
        var elsewhere = false
    }

    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts").path

    /// A script's first line of output (its URL), nil on failure.
    static func start(_ argv: [String], out: String) -> String? {
        var m = Measurement()
        spawn(["/bin/sh", "-c", "\"$@\" > \"$0\"", out] + argv, into: &m)
        guard m.failures == 0 else { return nil }
        return (try? String(contentsOfFile: out, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func stats(_ url: String) throws -> Stats {
        let c = try PostgresConnection(url: url, applicationName: "bench-stats")
        let r = try c.queryOne("SELECT xact_commit, tup_inserted, tup_updated FROM pg_stat_database WHERE datname = current_database()")
        return Stats(xacts: Double(r?.int(0) ?? 0), inserted: Double(r?.int(1) ?? 0), updated: Double(r?.int(2) ?? 0))
    }

    /// `--cluster --claims-only`: the queue's numbers alone (claims, claim + record, the
    /// writer), PostgreSQL beside SQLite, without the daemons: a minute, not fifteen.
    static func claimsOnly(json: Bool) throws {
        let scratch = "/tmp/photomemo-bench-claims-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let port = Int.random(in: 20_000...40_000)
        guard let admin = start([scripts + "/postgres", "start", scratch + "/pg", String(port)], out: scratch + ".url") else {
            throw SideBySide.Failure("PostgreSQL did not start (apt-get install postgresql); see \(scratch)/pg")
        }
        defer { var m = Measurement(); spawn([scripts + "/postgres", "stop", scratch + "/pg", "now"], into: &m); unlink(scratch + ".url") }
        StandardStream.err("claims on PostgreSQL and SQLite…\n")
        let pg = try ClaimBench.rates(jobs: 20_000, hosts: 2) { host in
            try Journal(connection: PostgresDatabase(url: admin), path: "bench", host: host, leaseSeconds: 30)
        }
        let shared = try Journal(path: scratch + "/claims.sqlite")
        let sqlite = try ClaimBench.rates(jobs: 20_000, hosts: 2) { _ in shared }
        if json {
            Swift.print(JSONValue.object([
                "claims_per_s": ["postgres": .double(pg.claims), "sqlite": .double(sqlite.claims)],
                "claim_record_per_s": ["postgres": .double(pg.claimRecord), "sqlite": .double(sqlite.claimRecord)],
                "writer_txns_per_s": ["postgres": .double(pg.writerTxns), "sqlite": .double(sqlite.writerTxns)],
            ]).jsonString)
            return
        }
        Swift.print("claims: \(isoTimestamp(unixNow())), \(uptimeLine())")
        Swift.print(String(format: "claims/s, batches of 64, 2 hosts:        PostgreSQL %7.0f  SQLite %7.0f   ≥ 10,000: %@", pg.claims, sqlite.claims,
                           pg.claims >= 10_000 ? "met" : "NOT met"))
        Swift.print(String(format: "claim + record (advance)/s, batches of 64: PostgreSQL %7.0f  SQLite %7.0f", pg.claimRecord, sqlite.claimRecord))
        Swift.print(String(format: "write transactions/s, 1 job each:         PostgreSQL %7.0f  SQLite %7.0f", pg.writerTxns, sqlite.writerTxns))
    }

    /// `elsewhere`: each daemon gets CPU 0 to itself and PostgreSQL, SeaweedFS and this
    /// process share CPU 1, as if the servers were other machines (a host's throughput is
    /// then its own CPU's); the queue measurements are skipped (they measure the servers).
    static func run(files: [String], rounds: Int, json: Bool, elsewhere: Bool = false) throws {
        let scratch = "/tmp/photomemo-bench-cluster-\(getpid())"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { if ProcessInfo.processInfo.environment["PM_KEEP"] == nil { try? FileManager.default.removeItem(atPath: scratch) } }
        let port = Int.random(in: 20_000...40_000) / 16 * 16
        // Servers elsewhere are real servers: PostgreSQL durable (fsync on), as deployed.
        let durable = elsewhere ? ["/usr/bin/env", "PHOTOMEMO_PG_DURABLE=1"] : []
        guard let admin = start(durable + [scripts + "/postgres", "start", scratch + "/pg", String(port + 15)], out: scratch + "/pg.url") else {
            throw SideBySide.Failure("PostgreSQL did not start (apt-get install postgresql); see \(scratch)/pg")
        }
        defer { var m = Measurement(); spawn([scripts + "/postgres", "stop", scratch + "/pg", "now"], into: &m) }
        let credentials = ["AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench-secret"]
        guard let endpoint = start([scripts + "/seaweedfs", "start", scratch + "/s3", String(port), "bench", "bench-secret", "bench"],
                                   out: scratch + "/s3.url") else { throw SideBySide.Failure("SeaweedFS did not start") }
        defer { var m = Measurement(); spawn([scripts + "/seaweedfs", "stop", scratch + "/s3", "now"], into: &m) }
        let weed = pid_t((try? String(contentsOfFile: scratch + "/s3/weed.pid", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
        // The first line of postmaster.pid is its process id.
        let postmaster = pid_t((try? String(contentsOfFile: scratch + "/pg/data/postmaster.pid", encoding: .utf8))?
            .split(separator: "\n").first.map(String.init) ?? "") ?? 0
        let server = try PostgresConnection(url: admin, applicationName: "bench-admin")
        func database(_ name: String) throws -> String {
            try server.exec("DROP DATABASE IF EXISTS \(name)")
            try server.exec("CREATE DATABASE \(name)")
            usleep(1_100_000)  // so the statistics of its creation are flushed before a first snapshot
            return String(admin[..<admin.lastIndex(of: "/")!]) + "/" + name
        }
        var r = Report()
        r.uptime = uptimeLine()
        r.photos = files.count
        r.elsewhere = elsewhere
        let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path + "/photomemo"
        if elsewhere {
            // Backends forked later inherit the postmaster's CPU; new threads their creator's.
            for p in [weed, postmaster, getpid()] + ProcStat.children(of: postmaster) { try CPUAffinity.pin(p, cpu: 1) }
            try daemons(files: files, rounds: rounds, binary: binary, scratch: scratch, endpoint: endpoint, credentials: credentials,
                        weed: weed, postmaster: postmaster, server: server, database: database, into: &r)
            try ClusterReport(r).print(json: json, svg: scratch.replacingOccurrences(of: "-\(getpid())", with: "") + "-elsewhere.svg")
            return
        }
        StandardStream.err("claims on PostgreSQL and SQLite…\n")
        let claimsURL = try database("pm_claims")
        r.pg = try ClaimBench.rates(jobs: 20_000, hosts: 2) { host in
            try Journal(connection: PostgresDatabase(url: claimsURL), path: "bench", host: host, leaseSeconds: 30)
        }
        let shared = try Journal(path: scratch + "/claims.sqlite")
        r.sqlite = try ClaimBench.rates(jobs: 20_000, hosts: 2) { _ in shared }
        StandardStream.err("add → claim via NOTIFY…\n")
        (r.latency, r.commitMs, r.claimMs) = try ClaimBench.notifyLatency(url: try database("pm_notify"), samples: 200)
        StandardStream.err("set-based claims (prototype)…\n")
        r.proto = try ClaimPrototype.rates(url: try database("pm_proto"), jobs: 20_000)

        // The journal's own writes per photo, in-process on a fresh database.
        let flowURL = try database("pm_flow")
        let flowBefore = try stats(flowURL)
        do {
            let j = try Journal(connection: PostgresDatabase(url: flowURL), path: "bench", host: "flow", leaseSeconds: 30)
            try JournalFlow.run(j, photos: 200)
        }
        usleep(1_500_000)  // backends' statistics are flushed as they exit
        r.journalPerPhoto = (try stats(flowURL)).minus(flowBefore).scaled(1.0 / 200)

        try daemons(files: files, rounds: rounds, binary: binary, scratch: scratch, endpoint: endpoint, credentials: credentials,
                    weed: weed, postmaster: postmaster, server: server, database: database, into: &r)
        try ClusterReport(r).print(json: json, svg: scratch.replacingOccurrences(of: "-\(getpid())", with: "") + ".svg")
    }

    static func uptimeLine() -> String {
        var m = Measurement()
        let out = "/tmp/photomemo-bench-uptime-\(getpid())"
        defer { unlink(out) }
        spawn(["/bin/sh", "-c", "uptime > \"$0\"", out], into: &m)
        return ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
