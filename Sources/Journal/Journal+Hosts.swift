import Foundation
import SQL

/// The daemons sharing this journal: each writes a heartbeat with its lease renewals;
/// `photomemo hosts` lists them with the jobs they hold and their recent rate.
extension Journal {
    /// This daemon takes the host id: its heartbeat, whoever wrote the last one.
    public func heartbeat(_ daemon: DaemonProcess, now: Double) throws {
        try write { db in
            try db.run("""
                INSERT INTO hosts(host, started, seen, pid, pid_space, instance) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(host) DO UPDATE SET started = excluded.started, seen = excluded.seen, pid = excluded.pid,
                                                pid_space = excluded.pid_space, instance = excluded.instance
                """, [.text(host), .double(daemon.started), .double(now), .int(Int64(daemon.pid)), .text(daemon.pidSpace), .text(daemon.instance)])
        }
    }

    /// This daemon is still alive: false when the host id's heartbeat is another daemon's
    /// now (one started under the same `--host-id` and took it).
    public func renewHeartbeat(_ daemon: DaemonProcess, now: Double) throws -> Bool {
        try write { db in
            try db.run("UPDATE hosts SET seen = ? WHERE host = ? AND instance = ?", [.double(now), .text(host), .text(daemon.instance)]) == 1
        }
    }

    /// The daemon that wrote this host id's heartbeat last, and when.
    public func lastHeartbeat() throws -> (daemon: DaemonProcess, seen: Double)? {
        try read { db in
            try db.queryOne("SELECT pid, pid_space, instance, started, seen FROM hosts WHERE host = ?", [.text(host)]).map {
                (DaemonProcess(pid: Int32($0.int(0)!), pidSpace: $0.string(1)!, instance: $0.string(2)!, started: $0.double(3)!), $0.double(4)!)
            }
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

/// A daemon process: its pid in `pidSpace` (the kernel run and pid namespace it means
/// something in: `BOOT_ID pid:[INODE]`), and `instance`, a random token no other process has.
public struct DaemonProcess: Sendable, Equatable {
    public let pid: Int32
    public let pidSpace: String
    public let instance: String
    public let started: Double

    public init(pid: Int32, pidSpace: String, instance: String, started: Double) {
        (self.pid, self.pidSpace, self.instance, self.started) = (pid, pidSpace, instance, started)
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
