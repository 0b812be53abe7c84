import Foundation
import SQL

/// The daemons sharing this journal: each writes a heartbeat with its lease renewals;
/// `photomemo hosts` lists them with the jobs they hold and their recent rate.
extension Journal {
    /// This host is alive (started at `started`, process `pid`).
    public func heartbeat(started: Double, pid: Int32, now: Double) throws {
        try write { db in
            try db.run("""
                INSERT INTO hosts(host, started, seen, pid) VALUES (?, ?, ?, ?)
                ON CONFLICT(host) DO UPDATE SET started = excluded.started, seen = excluded.seen, pid = excluded.pid
                """, [.text(host), .double(started), .double(now), .int(Int64(pid))])
        }
    }

    /// Every host seen within `window` seconds (and any holding a lease), busiest first.
    public func hosts(window: Double, now: Double) throws -> [HostSummary] {
        try read { db in
            let leases = Dictionary(uniqueKeysWithValues: try db.query(
                "SELECT lease_host, count(*) FROM jobs WHERE state = 'running' GROUP BY lease_host").map { ($0.string(0)!, Int($0.int(1)!)) })
            let done = Dictionary(uniqueKeysWithValues: try db.query(
                "SELECT host, count(*) FROM job_events WHERE event = 'done' AND at >= ? GROUP BY host", [.double(now - 60)])
                .map { ($0.string(0)!, Int($0.int(1)!)) })
            var out = try db.query("SELECT host, started, seen, pid FROM hosts WHERE seen >= ?", [.double(now - window)]).map {
                HostSummary(host: $0.string(0)!, started: $0.double(1), seen: $0.double(2), pid: $0.int(3).map(Int32.init),
                            leases: leases[$0.string(0)!] ?? 0, stageRunsLastMinute: done[$0.string(0)!] ?? 0)
            }
            for (h, n) in leases where !out.contains(where: { $0.host == h }) {
                out.append(HostSummary(host: h, started: nil, seen: nil, pid: nil, leases: n, stageRunsLastMinute: done[h] ?? 0))
            }
            return out.sorted { ($0.stageRunsLastMinute, $0.host) > ($1.stageRunsLastMinute, $1.host) }
        }
    }
}

/// One daemon on a shared journal.
public struct HostSummary: Sendable, Equatable {
    public let host: String
    /// Unknown for a host that holds leases but never wrote a heartbeat in the window.
    public let started: Double?
    public let seen: Double?
    public let pid: Int32?
    /// Jobs it is running now (leased to it).
    public let leases: Int
    /// Stage runs it finished successfully in the last minute.
    public let stageRunsLastMinute: Int
}
