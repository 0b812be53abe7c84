import Foundation
import Postgres

/// Counts, per photo, the statements one daemon run sends that matter to the one writer:
/// advisory-lock acquisitions by lock name and journal claims. One extra run with
/// `log_statement = all` on its own database (logging slows it, so it is not timed).
enum LockCount {
    static let claim = "SELECT id, key, photo_path, memo, results, attempts, photo_sha256, outages FROM jobs"

    static func run(_ daemon: inout DaemonRun, files: [String], server: PostgresConnection, database: String,
                    log: String, finished: () throws -> Int) throws -> [String: Double] {
        try server.exec("ALTER DATABASE \(database) SET log_statement = 'all'")
        let start = (try? FileManager.default.attributesOfItem(atPath: log)[.size] as? Int) ?? 0
        try daemon.start()
        do {
            defer { daemon.stop() }
            _ = try daemon.process(files, finished: finished)
        }
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: log))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(start))
        let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        var counts: [String: Double] = [:]
        for line in text.split(separator: "\n") {
            if let r = line.range(of: "pg_advisory_xact_lock(hashtext('") {
                let name = line[r.upperBound...].prefix { $0 != "'" }
                counts["lock " + name, default: 0] += 1
            } else if line.contains(claim) {
                counts["claims", default: 0] += 1
            }
        }
        return counts.mapValues { $0 / Double(files.count) }
    }
}
