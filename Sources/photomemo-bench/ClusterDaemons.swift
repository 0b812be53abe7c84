import Foundation
import Journal
import StageKit
import Postgres

extension ClusterBench {
    /// The real daemon per host: SQLite + folder, SQLite + S3 and PostgreSQL + S3 on the same
    /// photos, interleaved over rounds; PostgreSQL's writes per photo net of an idle daemon;
    /// then one logged run that counts the lock's acquisitions.
    static func daemons(files: [String], rounds: Int, binary: String, scratch: String, endpoint: String, credentials: [String: String],
                        weed: pid_t, postmaster: pid_t, server: PostgresConnection, database: (String) throws -> String,
                        into r: inout Report) throws {
        var perPhoto: [Stats] = []
        var s3: [[String: Int]] = []
        for round in 0..<rounds {
            // Interleaved, the order turned each round, so none always runs first.
            var configs = [Config.local, .sqliteS3, .postgresS3]
            if round % 2 == 1 { configs.reverse() }
            for config in configs where !(config == .postgresS3 && r.refused != nil) {
                StandardStream.err("round \(round + 1): \(config.rawValue)…\n")
                let home = scratch + "/r\(round)-\(config)"
                let s3Flags = ["--store", "s3://bench/r\(round)-\(config)?endpoint=\(endpoint)"]
                if config != .postgresS3 {
                    var d = try DaemonRun(binary: binary, home: home, extra: config == .local ? [] : s3Flags, environment: credentials)
                    d.cpu = r.elsewhere ? 0 : nil
                    if config == .sqliteS3 { d.serverPID = weed }
                    try d.start()
                    defer { d.stop() }
                    let journal = try Journal(path: home + "/photomemo.sqlite")
                    let result = try d.process(files) { let c = try journal.counts(); return (c[.done] ?? 0) + (c[.failed] ?? 0) }
                    if config == .local { r.local.append(result) } else { r.sqliteS3.append(result); s3.append(result.s3) }
                    continue
                }
                let url = try database("pm_r\(round)")
                let before = try stats(url)
                var d = try DaemonRun(binary: binary, home: home, extra: ["--database", url] + s3Flags, environment: credentials)
                d.cpu = r.elsewhere ? 0 : nil
                d.serverPID = weed
                d.postmasterPID = postmaster
                do { try d.start() } catch let e as DaemonRun.Refused {
                    r.refused = e.reason
                    continue
                }
                var polls = 0
                do {
                    defer { d.stop() }
                    let c = try PostgresConnection(url: url, applicationName: "bench-poll")
                    let result = try d.process(files) {
                        polls += 1
                        return Int(try c.queryOne("SELECT count(*) FROM jobs WHERE state IN ('done', 'failed')")?.int(0) ?? 0)
                    }
                    r.remote.append(result)
                    s3.append(result.s3)
                }
                usleep(1_500_000)
                var delta = (try stats(url)).minus(before)
                delta.xacts -= Double(polls)
                perPhoto.append(delta)
            }
        }
        if !r.remote.isEmpty && !r.elsewhere {
            StandardStream.err("one more PostgreSQL + S3 run, counting its statements…\n")
            let url = try database("pm_locks")
            var d = try DaemonRun(binary: binary, home: scratch + "/locks", extra: ["--database", url, "--store", "s3://bench/locks?endpoint=\(endpoint)"],
                                  environment: credentials)
            let c = try PostgresConnection(url: url, applicationName: "bench-poll")
            r.locks = try LockCount.run(&d, files: files, server: server, database: "pm_locks", log: scratch + "/pg/postgres.log") {
                Int(try c.queryOne("SELECT count(*) FROM jobs WHERE state IN ('done', 'failed')")?.int(0) ?? 0)
            }
        }
        let n = Double(files.count)
        for m in Set(s3.flatMap(\.keys)) { r.s3PerPhoto[m] = Double(s3.map { $0[m] ?? 0 }.min() ?? 0) / n }
        if let best = perPhoto.min(by: { $0.xacts < $1.xacts }), !r.elsewhere {
            // What an idle daemon adds over as long (start, heartbeats, timers, stop), taken off.
            r.idleSeconds = r.remote.map(\.wall).min() ?? 1
            let idleURL = try database("pm_idle")
            let before = try stats(idleURL)
            var d = try DaemonRun(binary: binary, home: scratch + "/idle", extra: ["--database", idleURL, "--store", "s3://bench/idle?endpoint=\(endpoint)"],
                                  environment: credentials)
            try d.start()
            usleep(UInt32(r.idleSeconds * 1_000_000))
            d.stop()
            usleep(1_500_000)
            r.idle = (try stats(idleURL)).minus(before)
            r.daemonPerPhoto = best.minus(r.idle).scaled(1 / n)
        }
    }
}
