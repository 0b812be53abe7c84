import Foundation
import Glibc
import TestSupport
import Testing

/// A host id is one daemon's on a shared database (`HostClaim`): a second daemon under a
/// running one's id (a cloned machine) is refused, and one stopped past two renewals loses
/// it to a daemon started meanwhile and stops, instead of running each other's jobs.
@Suite(.serialized) struct HostIDTests {
    @Test func aSecondDaemonUnderARunningDaemonsHostIDIsRefused() throws {
        let c = try ClusterTests.Cluster(["a"])
        defer { c.stop() }
        let a = c.hosts[0]
        let pid = try #require(a.process).processIdentifier
        let clone = try DaemonHarness(stages: ClusterTests.definition)
        // `timeout`: a build that let it serve fails here rather than hang.
        let (status, _, err) = try DaemonHarness.spawn(["/usr/bin/timeout", "30", DaemonHarness.binary, "serve", "--home", clone.home,
                                                        "--job", clone.jobFile, "--database", c.url, "--host-id", "a", "--lease", "2"])
        #expect(status != 0)
        #expect(err.contains("host id \"a\" is in use by another running daemon on this database (pid \(pid)"), "\(err)")
        #expect(err.contains("give each daemon its own --host-id"))
        // The running one goes on, its jobs untouched.
        try a.drop("orientation_landscape_1.jpg")
        try a.waitIdle(jobs: 1, timeout: 60)
        #expect(try a.stateCounts() == ["done": 1])
        // Its own restart after a SIGKILL takes the id at once: its last process is gone.
        a.stop(SIGKILL)
        try c.start(a, "a")
        #expect(!a.log.contains("may be a running daemon's"), "\(a.log)")
    }

    /// Containers cloned from one image share the kernel and may share pids (each daemon
    /// its namespace's pid 1): a pid alone does not tell the clone from the daemon's own
    /// restart. The pid namespace does.
    @Test func aCloneInAnotherPidNamespaceWithTheSamePidIsRefused() throws {
        let namespace = ["/usr/bin/unshare", "--pid", "--fork", "--kill-child"]
        let c = try ClusterTests.Cluster([])
        defer { c.stop() }
        let a = try DaemonHarness(stages: ClusterTests.definition)
        a.database = c.url
        // SIGKILL: a child started from a test thread blocks SIGTERM (PLATFORM.md); unshare's child dies with it.
        defer { a.stop(SIGKILL) }
        try a.start(args: ["--host-id", "a", "--lease", "2"], launcher: namespace)
        let clone = try DaemonHarness(stages: ClusterTests.definition)
        let (status, _, err) = try DaemonHarness.spawn(["/usr/bin/timeout", "30"] + namespace + [DaemonHarness.binary, "serve",
                                                        "--home", clone.home, "--job", clone.jobFile, "--database", c.url, "--host-id", "a", "--lease", "2"])
        #expect(status != 0)
        #expect(err.contains("host id \"a\" is in use by another running daemon on this database (pid 1,"), "\(err)")
    }

    @Test func aDaemonStoppedPastTwoRenewalsLosesItsHostIDAndStops() throws {
        let c = try ClusterTests.Cluster(["a"])
        defer { c.stop() }
        let a = c.hosts[0]
        let first = try #require(a.process).processIdentifier
        kill(first, SIGSTOP)
        let b = try DaemonHarness(stages: ClusterTests.definition)
        b.database = c.url
        defer { b.stop() }
        try c.start(b, "a")  // watches the heartbeat 3 s (two thirds of the 2 s lease, and a second), then takes the id
        #expect(b.log.contains("host id a: its last heartbeat (pid \(first)"), "\(b.log)")
        kill(first, SIGCONT)
        let (status, reason) = try a.waitForExit(timeout: 30)
        #expect(reason == .exit && status == 0)
        let second = try #require(b.process).processIdentifier
        #expect(a.log.contains("host id a was taken by another daemon (pid \(second)) while this one could not renew it: stopping"), "\(a.log)")
        try b.drop("orientation_landscape_2.jpg")
        try b.waitIdle(jobs: 1, timeout: 60)
        #expect(try b.stateCounts() == ["done": 1])
    }
}
