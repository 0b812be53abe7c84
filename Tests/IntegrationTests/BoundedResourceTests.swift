import CompressStage
import Foundation
import Glibc
import PhotomemoCore
import TestSupport
import Testing

/// What one client or one subprocess can cost the daemon is bounded (issue #13), and
/// subprocesses get a clean environment (issue #12).
@Suite(.serialized) struct BoundedResourceTests {
    /// The daemon's resident memory, from /proc/PID/status.
    static func rssMB(_ pid: Int32) -> Double {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Double(line.split(separator: " ").dropFirst().first ?? "0").map { $0 / 1024 } ?? 0
    }

    /// Pids of live processes whose command line contains `marker` (zombies have none).
    static func processes(with marker: String) -> [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { name in
            guard let pid = Int32(name), let cmd = FileManager.default.contents(atPath: "/proc/\(name)/cmdline") else { return nil }
            return String(decoding: cmd, as: UTF8.self).contains(marker) ? pid : nil
        }
    }

    /// Reads and discards until the peer closes: true if it did within `timeout`.
    static func closedByPeer(_ fd: Int32, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while Date() < deadline {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 200) > 0 else { continue }
            if read(fd, &chunk, chunk.count) <= 0 { return true }
        }
        return false
    }

    /// A daemon with the local-store pipeline and one record whose original is a ~4 MB
    /// 12 MP JPEG (the test photos are all smaller); returns the record id and the file.
    func daemonWithLargeOriginal() throws -> (DaemonHarness, String, String) {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/local-store.json"), encoding: .utf8))
        try d.start()
        let photo = d.root + "/big.jpg"
        try SyntheticPhoto.write(to: photo, width: 4032, height: 3024, orientation: 1, seed: 7, quality: 92)
        let size = (try? FileManager.default.attributesOfItem(atPath: photo)[.size] as? Int) ?? 0
        #expect(size > 3_000_000, "the original is \(size) bytes")
        try FileManager.default.copyItem(atPath: photo, toPath: d.home + "/inbox/.big.jpg.part")
        rename(d.home + "/inbox/.big.jpg.part", d.home + "/inbox/big.jpg")
        try d.waitIdle(jobs: 1, timeout: 90)
        let record = try #require(try json(d, ["query", "TRUEPREDICATE"])["records"]?.arrayValue?.first)
        return (d, try #require(record["id"]?.stringValue), photo)
    }

    /// Memos may be up to a line's 1 MiB, so a page of `limit` 1000 could be a gigabyte
    /// built in memory for one request (ten such queries at once took the daemon from
    /// 100 MB to 700 MB). A page stops at about 4 MiB of record text, with a cursor (or
    /// `next`) for the rest, and paging still returns every record once.
    /// Started at a soft limit of 256 descriptors (systemd starts services at 1,024), the
    /// daemon raises it to the hard one: every queue file read, inbox folder watched and
    /// client holds one.
    @Test func theDaemonRaisesItsDescriptorLimitToTheHardOne() throws {
        let d = try DaemonHarness()
        try d.start(launcher: ["/usr/bin/prlimit", "--nofile=256:8192"])
        defer { d.stop() }
        let pid = try #require(d.process?.processIdentifier)
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let line = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        #expect(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).prefix(2) == ["8192", "8192"], "\(line)")
    }

    @Test func aPageOfHugeMemosIsCutShortAndPagingGetsTheRest() throws {
        let d = try DaemonHarness(stages: try String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8))
        try d.start()
        let memo = String(repeating: "word ", count: 160_000)  // 800 KB
        for i in 0..<8 { try d.append(#"{"type":"Big","memo":"\#(memo)\#(i)"}"# + "\n") }
        try d.waitIdle(jobs: 8, timeout: 120)
        let seen = try pagedIDs(d, ["query", "TRUEPREDICATE", "--type", "Big", "--limit", "8"], items: "records")
        #expect(seen.count == 8 && Set(seen).count == 8, "\(seen.count) records, \(Set(seen).count) distinct")
        var creates = 0, since: Int64 = 0
        for _ in 0..<20 {
            let page = try json(d, ["changes", "--since", String(since), "--limit", "100"])
            let changes = page["changes"]?.arrayValue ?? []
            if changes.isEmpty { break }
            #expect(changes.count <= 5, "a page of \(changes.count) changes of 800 KB")
            creates += changes.filter { $0["op"] == "create" }.count
            since = page["next"]?.intValue ?? since
        }
        #expect(creates == 8)
        // The jobs list is bounded the same way (its memos are the jobs' own).
        let jobs = try pagedIDs(d, ["jobs", "--limit", "1000"], items: "jobs")
        #expect(jobs.count == 8 && Set(jobs).count == 8, "\(jobs.count) jobs, \(Set(jobs).count) distinct")
        #expect(d.stop().status == 0)
    }

    /// Every page of `args` while there is a cursor (at most 20), each of 1 to 5 `items` of
    /// 800 KB; their ids, as text.
    func pagedIDs(_ d: DaemonHarness, _ args: [String], items: String) throws -> [String] {
        var ids: [String] = [], cursor: String?, pages = 0
        repeat {
            let page = try json(d, args + (cursor.map { ["--cursor", $0] } ?? []))
            let list = page[items]?.arrayValue ?? []
            #expect(list.count >= 1 && list.count <= 5, "a page of \(list.count) \(items) of 800 KB")
            ids += list.compactMap { $0["id"].flatMap { $0.stringValue ?? $0.intValue.map(String.init) } }
            cursor = page["cursor"]?.stringValue
            pages += 1
        } while cursor != nil && pages < 20
        return ids
    }

    @Test func aClientThatAsksForManyOriginalsAndNeverReadsIsCutOffWithoutGrowingTheDaemon() throws {
        let (d, id, photo) = try daemonWithLargeOriginal()
        let pid = try #require(d.process?.processIdentifier)

        // (b) The CLI's copy is the original, byte for byte, and no temp file is left.
        let out = d.root + "/copy/original.jpg"
        try FileManager.default.createDirectory(atPath: d.root + "/copy", withIntermediateDirectories: true)
        let r = try json(d, ["asset", id, "original", "-o", out])
        let original = try SHA256.hexOfFile(atPath: photo)
        #expect(try SHA256.hexOfFile(atPath: out).hex == original.hex)
        #expect(r["bytes"]?.intValue == original.bytes)
        #expect(try FileManager.default.contentsOfDirectory(atPath: d.root + "/copy") == ["original.jpg"])

        // (a) 200 requests for the original, never read: before the limits this grew the
        // daemon by 1.7-4 GB. Now at most 16 run, each holds at most a 256 KiB chunk
        // while the write buffer is under 256 KiB, so +64 MB is a generous bound.
        let before = Self.rssMB(pid)
        let attacker = try SocketClient(path: d.home + "/photomemo.sock", receiveBuffer: 4096)
        attacker.send((1...200).map { #"{"id":\#($0),"cmd":"asset","record":"\#(id)","rendition":"original"}"# }.joined(separator: "\n") + "\n")
        let other = try SocketClient(path: d.home + "/photomemo.sock")
        var peak = before
        var slowest = 0.0
        var n: Int64 = 0
        let started = Date()
        while !d.log.contains("disconnecting control client") && Date().timeIntervalSince(started) < 30 {
            peak = max(peak, Self.rssMB(pid))
            let t = Date()
            n += 1
            #expect(other.call("status", id: n)?["ok"] == true)
            slowest = max(slowest, Date().timeIntervalSince(t))
            Thread.sleep(forTimeInterval: 0.1)
        }
        peak = max(peak, Self.rssMB(pid))
        print("RSS under 200 unread asset requests: \(before) MB before, \(peak) MB peak; slowest status \(slowest) s")
        #expect(peak - before < 64, "RSS grew from \(before) MB to \(peak) MB")
        #expect(d.log.contains("disconnecting control client uid \(getuid()) pid \(getpid())"))
        #expect(Self.closedByPeer(attacker.fd, timeout: 10))
        // No stream could finish, so the other 184 requests were never taken off the socket.
        #expect(d.log.contains("with 16 requests in flight"), "\(d.log.suffix(2000))")
        #expect(slowest < 1, "slowest status reply took \(slowest) s")
        // The daemon still serves assets after the attack.
        #expect(other.call("asset", ["record": .string(id), "rendition": "thumbnail"], id: 9999)?["result"]?["chunks"] == 1)
        #expect(d.stop().status == 0)
    }

    static let notifyDefinition = """
        {"name": "notify-test", "stages": [{"use": "index", "with": {}}, {"use": "notify", "with": {}}],
         "retry": {"max_attempts": 6, "base_ms": 50, "max_ms": 300}}
        """

    /// (c) Exec sinks that never exit are timed out, so they cannot hold every delivery
    /// slot; on SIGTERM they die with the daemon, within the grace.
    @Test func execSinksThatNeverExitDoNotStopWebhooksOrShutdown() throws {
        let d = try DaemonHarness(stages: Self.notifyDefinition)
        try d.start(args: ["--sink-timeout", "1"])
        let receiver = try Receiver(dir: d.root, secret: "k", failFirst: 0)
        let marker = "98765.\(UInt16.random(in: 1000...9999))"
        for _ in 0..<8 { _ = try json(d, ["subscribe", "--type", "Memo", "--exec", "sleep \(marker) >/dev/null 2>&1"]) }
        _ = try json(d, ["subscribe", "--type", "Memo", "--webhook", receiver.url, "--secret", "k"])
        try d.append(#"{"memo":"hello"}"# + "\n")
        try d.waitUntil("the webhook is delivered beside 8 stuck sinks", timeout: 20) {
            receiver.requests.contains { $0["body"]?["record"]?["memo"] == "hello" }
        }
        // Each sink's lane has its own slot now, so all eight start at once: wait for one
        // to be timed out, then for a stuck sink to be running (again) when SIGTERM comes.
        try d.waitUntil("a stuck sink is timed out", timeout: 20) { d.log.contains("timed out after 1000 ms") }
        try d.waitUntil("a stuck sink is running", timeout: 20) { !Self.processes(with: marker).isEmpty }
        let start = Date()
        #expect(d.stop().status == 0)
        let took = Date().timeIntervalSince(start)
        #expect(took < 10 + 5, "SIGTERM took \(took) s with --grace 10")
        #expect(Self.processes(with: marker).isEmpty, "left behind: \(Self.processes(with: marker))")
    }

    /// An exec stage that closes its output and never exits outlives neither the grace
    /// nor the daemon: SIGTERM ends it with its process group soon after `--grace` (10 s).
    @Test func aHungExecStageIsEndedWhenTheGraceRunsOut() throws {
        let marker = "97531.\(UInt16.random(in: 1000...9999))"
        let d = try DaemonHarness(stages: """
            {"name": "hung", "stages": [{"use": "exec", "with": {"command": ["/bin/sh", "-c", "sleep \(marker) >/dev/null 2>&1"],
              "timeout_ms": 600000}}]}
            """)
        try d.start()
        try d.append(#"{"memo":"never ends"}"# + "\n")
        try d.waitUntil("the stage runs") { !Self.processes(with: marker).isEmpty }
        let start = Date()
        #expect(d.stop().status == 0)
        let took = Date().timeIntervalSince(start)
        #expect(took >= 9 && took < 10 + 5, "SIGTERM took \(took) s with --grace 10")
        #expect(Self.processes(with: marker).isEmpty, "left behind: \(Self.processes(with: marker))")
    }

    /// (d) An exec sink sees PATH, HOME, LANG and its PHOTOMEMO_* variables, none of the
    /// daemon's secrets.
    @Test func anExecSinkGetsACleanEnvironment() throws {
        let d = try DaemonHarness(stages: Self.notifyDefinition)
        let secret = "fake-secret-\(UInt32.random(in: 0...UInt32.max))"
        try d.start(env: ["AWS_SECRET_ACCESS_KEY": secret, "AWS_ACCESS_KEY_ID": "AKIAFAKE", "PGPASSWORD": secret + "-pg"])
        let dump = d.root + "/sink-env.txt"
        let sub = try json(d, ["subscribe", "--type", "Memo", "--exec", "env > \(dump).tmp && mv \(dump).tmp \(dump)"])
        try d.append(#"{"memo":"show me"}"# + "\n")
        try d.waitUntil("the sink writes its environment") { FileManager.default.fileExists(atPath: dump) }
        let env = try String(contentsOfFile: dump, encoding: .utf8)
        let names = Set(env.split(separator: "\n").compactMap { $0.split(separator: "=", maxSplits: 1).first.map(String.init) })
        #expect(!env.contains(secret))
        #expect(names.allSatisfy { !$0.hasPrefix("AWS_") && $0 != "PGPASSWORD" && $0 != "PHOTOMEMO_FAILPOINTS" && $0 != "EFFECTS" })
        #expect(env.contains("PHOTOMEMO_SUBSCRIPTION=\(sub["id"]?.stringValue ?? "?")"))
        #expect(names.contains("PATH") && names.contains("PHOTOMEMO_EVENT_ID"))
        // What /bin/sh adds itself (PWD, SHLVL, _) is all there is beyond the allowed set.
        let allowed: Set<String> = ["PATH", "HOME", "LANG", "PHOTOMEMO_SUBSCRIPTION", "PHOTOMEMO_EVENT_ID", "PHOTOMEMO_RUN", "PWD", "SHLVL", "_", "OLDPWD"]
        #expect(names.subtracting(allowed).isEmpty, "unexpected: \(names.subtracting(allowed).sorted())")
        #expect(d.stop().status == 0)
    }
}
