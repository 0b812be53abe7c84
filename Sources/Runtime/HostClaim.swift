import EventLoop
import Foundation
import Glibc
import Journal
import StageKit

/// A host id is one daemon's on a shared journal: two under one id (machines cloned with the
/// same hostname and home keep the default's) would resume and claim each other's jobs. At
/// start a daemon takes the id with its heartbeat. When the last heartbeat under the id may be
/// a live daemon's — not from a process of this pid space that is gone — it first watches
/// that heartbeat for two renewal periods (a third of a lease each, `LeaseKeeper`) and
/// refuses to start if it moves. A daemon stopped or cut off longer than that loses the id:
/// its next renewal finds another's heartbeat, and it stops.
enum HostClaim {
    /// This process, as its heartbeat names it.
    static let me = DaemonProcess(pid: getpid(), pidSpace: pidSpace(), instance: String(UInt64.random(in: 0...UInt64.max), radix: 16),
                                  started: unixNow())

    /// On a journal without leases (SQLite in the home) no other daemon shares it: the home's lock is the claim.
    static func take(_ journal: any JobJournal) throws {
        let host = journal.host
        if let leaseSeconds = journal.leaseSeconds, let last = try journal.lastHeartbeat(), mayBeAlive(last.daemon) {
            let window = (leaseSeconds * 2 / 3 + 1).rounded(.up)
            Log.notice("host id \(host): its last heartbeat (pid \(last.daemon.pid), \(age(last.seen)) ago) may be a running daemon's; watching it \(Int(window)) s before taking the id")
            let until = unixNow() + window
            while unixNow() < until {
                if let signal = SignalWatcher.waitForStopSignal(upToMs: 500) {
                    throw StoppedWhileWaiting(signal: signal, waitingFor: "host id \(host)'s last daemon")
                }
                if let now = try journal.lastHeartbeat(), now.seen != last.seen || now.daemon != last.daemon {
                    throw PhotomemoError(.locked, "host id \"\(host)\" is in use by another running daemon on this database (pid \(now.daemon.pid), heartbeat \(age(now.seen)) ago): give each daemon its own --host-id")
                }
            }
        }
        try DiskSpace.waitingForSpace("the heartbeat") { try journal.heartbeat(me, now: unixNow()) }
    }

    /// Not a process of this pid space that has ended (nor this one: a daemon served before
    /// in this process). Containers cloned from one image share the kernel, and may share
    /// pids, but not the pid namespace. The heartbeat's age is not asked: it is another
    /// machine's clock (one a lease slow made a live daemon's heartbeat look stale).
    static func mayBeAlive(_ daemon: DaemonProcess) -> Bool {
        guard daemon.pidSpace == me.pidSpace, !me.pidSpace.isEmpty else { return true }
        return daemon.pid != me.pid && (kill(daemon.pid, 0) == 0 || errno == EPERM)
    }

    private static func age(_ seen: Double) -> String { "\(max(0, Int(unixNow() - seen))) s" }

    /// Where a pid names one process: a reboot changes the boot id, a container its pid namespace.
    private static func pidSpace() -> String {
        let boot = ((try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let namespace = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/pid")) ?? ""
        return boot.isEmpty || namespace.isEmpty ? "" : boot + " " + namespace
    }
}

/// SIGTERM or SIGINT while start-up waits (for space, for a host id's last daemon): the
/// daemon stops (status 0).
struct StoppedWhileWaiting: Error {
    let signal: Int32
    let waitingFor: String
}
