import Foundation
import Journal
import Index
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// Two real uids on one daemon run by root (DESIGN.md, "Who may do what"): "nobody" plays
/// bob, the attacker, and "daemon" plays alice. Each hole found in the multi-user setup is
/// tried as bob and must be closed; each path bob may use must still work.
@Suite(.serialized, .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
struct WhoMayDoWhatTests {
    let bob = "nobody", alice = "daemon"

    /// The per-user setup of docs/who-may-do-what.md: home traversable, inbox and queue.d drop boxes;
    /// on `database` (a `postgres://` URL) when given.
    /// `stages`: a job definition's text instead of Jobs/photo-memo.json's; `definition`:
    /// top-level keys added to it.
    func start(_ extra: [String] = [], database: String? = nil, stages: String? = nil, definition: [String: JSONValue] = [:]) throws -> DaemonHarness {
        let standard = try stages ?? String(contentsOf: packageRoot.appendingPathComponent("Jobs/photo-memo.json"), encoding: .utf8)
        let d = try DaemonHarness(stages: definition.isEmpty ? standard
            : JSONValue.object((try JSONValue.parse(standard).objectValue ?? [:]).merging(definition) { $1 }).jsonString)
        if let database { d.database = database }
        try makeDropBoxes(d)
        try d.start(args: ["--socket-group", "nogroup"] + extra)
        return d
    }

    /// The home traversable by everyone, its inbox and queue.d writable by everyone (sticky).
    func makeDropBoxes(_ d: DaemonHarness) throws {
        for dir in [d.root, d.home] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            chmod(dir, 0o751)
        }
        chmod(d.root, 0o755)
        for dir in [d.home + "/inbox", d.home + "/queue.d"] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            chmod(dir, 0o1777)
        }
    }

    /// Bob's 3,000 notes, written straight into the index while `d` is stopped (through the
    /// pipeline they take a minute; the records are the same), then `d` started again.
    func restartWithBobsNotes(_ d: DaemonHarness) throws {
        d.stop()
        let index = try RecordStore(path: d.home + "/photomemo.sqlite")
        _ = try index.apply(batch: (0..<3000).map {
            RecordInput(jobKey: "b\($0)", photoSHA256: nil, memo: MemoJob(memo: "note \($0)", type: "Note", fields: ["n": .int(Int64($0)), "t": .string("t\($0)")], owner: bob),
                        assets: .emptyObject, exif: .emptyObject, width: nil, height: nil)
        }, now: unixNow())
        try d.start(args: ["--socket-group", "nogroup"])
    }

    /// `photomemo ARGS --home HOME` as `user` (group nogroup, the socket's): (status, stdout, stderr).
    func cli(_ user: String, _ d: DaemonHarness, _ args: [String]) throws -> (Int32, String, String) {
        try DaemonHarness.run(as: user, group: "nogroup", [DaemonHarness.binary] + args + ["--home", d.home])
    }

    func cliJSON(_ user: String, _ d: DaemonHarness, _ args: [String]) throws -> JSONValue {
        let (status, out, err) = try cli(user, d, args + ["--json"])
        #expect(status == 0, "\(user) \(args): \(err)")
        return try JSONValue.parse(out)
    }

    /// Sends raw request lines as `user` and returns every line the daemon sends back
    /// within `seconds`.
    func raw(_ user: String, _ d: DaemonHarness, _ requests: [JSONValue], seconds: Double = 3) throws -> [JSONValue] {
        try rawInBackground(user, d, requests, seconds: seconds)()
    }

    /// The same, started now; the returned function waits for the lines.
    func rawInBackground(_ user: String, _ d: DaemonHarness, _ requests: [JSONValue], seconds: Double) throws -> () -> [JSONValue] {
        let script = """
            import socket, sys, time
            s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode())
            s.settimeout(0.2); end = time.time() + float(sys.argv[3]); buf = b""
            while time.time() < end:
                try:
                    chunk = s.recv(65536)
                    if not chunk: break
                    buf += chunk
                except socket.timeout: pass
            sys.stdout.write(buf.decode())
            """
        let output = try python(as: user, script, [d.home + "/photomemo.sock", requests.map { $0.jsonString + "\n" }.joined(), String(seconds)])
        return { String(decoding: output(), as: UTF8.self).split(separator: "\n").compactMap { try? JSONValue.parse(String($0)) } }
    }

    /// Python's `script` with `arguments`, started now as `user` (group nogroup, the
    /// socket's); the returned function waits for it and gives what it printed.
    func python(as user: String, _ script: String, _ arguments: [String]) throws -> () -> Data {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
        p.arguments = ["-u", user, "-g", "nogroup", "--", "/usr/bin/python3", "-c", script] + arguments
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        return {
            let data = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return data
        }
    }

    func drop(_ user: String, _ d: DaemonHarness, _ photo: String, as name: String) throws {
        let (folder, base) = MemoSidecar.split(name)  // the temporary name beside the final one, as tools do
        #expect(try DaemonHarness.run(as: user, ["/bin/cp", testPhotos.appendingPathComponent(photo).path, "\(d.home)/inbox/\(folder).\(base).part"]).0 == 0)
        #expect(try DaemonHarness.run(as: user, ["/bin/mv", "\(d.home)/inbox/\(folder).\(base).part", "\(d.home)/inbox/\(name)"]).0 == 0)
    }

    func appendLine(_ user: String, _ line: String, to file: String, umask: String = "022") throws {
        #expect(try DaemonHarness.run(as: user, ["/bin/sh", "-c", "umask \(umask); printf '%s\\n' '\(line)' >> \(file)"]).0 == 0)
    }

    func records(_ user: String, _ d: DaemonHarness, _ type: String? = nil) throws -> [JSONValue] {
        try cliJSON(user, d, ["query", "TRUEPREDICATE"] + (type.map { ["--type", $0] } ?? []))["records"]?.arrayValue ?? []
    }

    @Test func eachUserActsOnlyAsThemself() throws {
        let d = try start()
        // Alice's record, from her own queue.d file and her photo.
        try appendLine(alice, #"{"photo":"alice.jpg","type":"Memo","memo":"alice secret","fields":{"code":"A-1"}}"#, to: d.home + "/queue.d/alice.jsonl")
        try drop(alice, d, "Nikon_D70.jpg", as: "alice.jpg")
        try d.waitIdle(jobs: 1, timeout: 90)
        let alices = try records(alice, d)
        #expect(alices.count == 1 && alices[0]["owner"] == .string(alice) && alices[0]["memo"] == "alice secret")
        let aliceRecord = try #require(alices.first?["id"]?.stringValue)
        let aliceJob = try #require(try d.jobs().first?.id)

        // 1. An exec sink as bob is refused; nothing runs as root.
        let marker = d.root + "/pwned-\(getpid())"
        let (execStatus, _, execErr) = try cli(bob, d, ["subscribe", "--type", "Pwn", "--fires-on", "create", "--exec", "id > \(marker)"])
        #expect(execStatus == 1 && execErr.contains("admins"), "\(execErr)")
        // 2. Bob sees none of alice's jobs and cannot act on them or on the daemon.
        let bobJobs = try cliJSON(bob, d, ["jobs"])["jobs"]?.arrayValue ?? []
        #expect(bobJobs.isEmpty, "\(bobJobs)")
        for args in [["job", String(aliceJob)], ["cancel", String(aliceJob)], ["retry", String(aliceJob)]] {
            let (status, _, err) = try cli(bob, d, args)
            #expect(status == 1 && err.contains("no job"), "\(args): \(err)")
        }
        for args in [["pause"], ["resume"], ["reload"], ["enqueue", "--memo", "as alice", "--owner", alice]] {
            let (status, _, err) = try cli(bob, d, args)
            #expect(status == 1 && err.contains("admins"), "\(args): \(err)")
        }
        let paused = try raw(bob, d, [["id": 1, "cmd": "pause"]], seconds: 1)
        #expect(paused.first?["error"]?["code"] == "forbidden")
        // 3. Bob's job naming alice's record, over the socket and in his queue file, changes nothing;
        //    "owner": alice in his own file makes a record of his.
        let forged = try raw(bob, d, [["id": 2, "cmd": "enqueue", "job": ["record": .string(aliceRecord), "memo": "pwned"]]], seconds: 2)
        #expect(forged.first?["ok"] == true)
        try appendLine(bob, #"{"record":"\#(aliceRecord)","memo":"pwned by line"}"#, to: d.home + "/queue.d/bob.jsonl")
        try appendLine(bob, #"{"memo":"claims to be alice","owner":"\#(alice)","type":"Note"}"#, to: d.home + "/queue.d/bob.jsonl")
        // 4. Bob's memo waiting for IMG.jpg never takes alice's IMG.jpg.
        #expect(try cli(bob, d, ["enqueue", "IMG.jpg", "--memo", "mine", "--type", "Snatch"]).0 == 0)
        try drop(alice, d, "Pentax_K10D.jpg", as: "IMG.jpg")
        // 5. Bob dropping alice's bytes gets a record of his own, not a duplicate of hers.
        try drop(bob, d, "Nikon_D70.jpg", as: "bob-copy.jpg")
        try d.waitUntil("bob's and alice's jobs are finished", timeout: 90) {
            let jobs = try d.jobs()
            return jobs.count >= 7 && jobs.filter { ["queued", "running"].contains($0.state) }.isEmpty
        }
        let after = try #require(try records(alice, d).first { $0["id"]?.stringValue == aliceRecord })
        #expect(after["memo"] == "alice secret" && after["fields"]?["code"] == "A-1")
        let failed = try d.jobs("state = 'failed'")
        #expect(failed.count == 2 && failed.allSatisfy { $0.error?.contains(aliceRecord) == true }, "\(failed.map(\.error))")
        let bobs = try records(bob, d)
        #expect(Set(bobs.compactMap { $0["memo"]?.stringValue }) == ["claims to be alice", ""], "\(bobs)")
        #expect(bobs.allSatisfy { $0["owner"] == .string(bob) })
        #expect(d.log.contains(#"queue.d/bob.jsonl line 2: "owner": "\#(alice)" is not honoured in a file of \#(bob)'s"#), "said so")
        let aliceTypes = Set(try records(alice, d).compactMap { $0["type"]?.stringValue })
        #expect(aliceTypes == ["Memo", "Photo"], "alice's IMG.jpg is her own Photo record: \(aliceTypes)")
        let snatch = try #require(try d.jobs().first { $0.memo.contains("Snatch") })
        #expect(snatch.state == "waiting")
        let bobCopy = try #require(try d.jobs().first { $0.photo == "bob-copy.jpg" })
        let duplicates = try d.jobs("duplicate_of IS NOT NULL").map(\.id)
        #expect(bobCopy.state == "done" && !duplicates.contains(bobCopy.id))
        // Bob can fetch his copy's original, never alice's.
        let bobPhoto = try #require(bobs.first { $0["memo"] == "" }?["id"]?.stringValue)
        let out = NSTemporaryDirectory() + "pm-bob-\(getpid()).jpg"
        defer { unlink(out) }
        #expect(try cli(bob, d, ["asset", bobPhoto, "original", "-o", out]).0 == 0)
        #expect(try cli(bob, d, ["asset", aliceRecord, "original", "-o", out + "2"]).0 == 1)
        #expect(!FileManager.default.fileExists(atPath: marker))

        // Allowed: bob's own jobs, one of them by id, and his own cancel.
        let mine = try cliJSON(bob, d, ["jobs"])["jobs"]?.arrayValue ?? []
        #expect(mine.count >= 5 && mine.allSatisfy { $0["owner"] == .string(bob) })
        #expect(try cli(bob, d, ["job", String(snatch.id)]).0 == 0)
        #expect(try cli(bob, d, ["cancel", String(snatch.id)]).0 == 0)
        // Status shows bob counts and only his own queue file.
        let status = try cliJSON(bob, d, ["status"])
        #expect(status["queue_files"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["queue.d/bob.jsonl"])
        #expect(try cliJSON(alice, d, ["status"])["queue_files"]?.arrayValue?.count == 1)
        #expect(try cliJSON("root", d, ["status"])["queue_files"]?.arrayValue?.count == 2)
        #expect(d.stop().status == 0)
    }

    @Test func watchAndFollowersHearOnlyOfWhatTheUserMaySee() throws {
        let d = try start(["--allow-private-webhooks"])  // bob's receiver is on loopback
        // Bob watches and follows a socket subscription for 8 s while alice and bob both add memos.
        // and has a webhook subscription of his own on every Memo.
        let receiver = try Receiver(dir: d.root, secret: "bobs", failFirst: 0)
        #expect(try cli(bob, d, ["subscribe", "--type", "Memo", "--fires-on", "create", "--webhook", receiver.url, "--secret", "bobs"]).0 == 0)
        let listen = try rawInBackground(bob, d, [["id": 1, "cmd": "watch"],
                                                  ["id": 2, "cmd": "subscribe", "type": "Memo", "fires_on": "create"]], seconds: 8)
        Thread.sleep(forTimeInterval: 1.5)
        #expect(try cli(alice, d, ["enqueue", "--memo", "alice private"]).0 == 0)
        #expect(try cli(bob, d, ["enqueue", "--memo", "bob public"]).0 == 0)
        let heard = listen()
        let jobs = try d.jobs()
        let bobJob = try #require(jobs.first { $0.memo.contains("bob public") }?.id)
        let aliceJob = try #require(jobs.first { $0.memo.contains("alice private") }?.id)
        let jobEvents = heard.filter { $0["event"] != nil && $0["event"] != "record_create" }
        #expect(jobEvents.contains { $0["job"]?.intValue == bobJob && $0["event"] == "job_done" }, "\(heard)")
        #expect(!jobEvents.contains { $0["job"]?.intValue == aliceJob }, "\(heard)")
        let creates = heard.filter { $0["op"] == "create" }
        #expect(creates.count == 1 && creates[0]["record"]?["memo"] == "bob public", "\(heard)")
        #expect(!heard.contains { $0.jsonString.contains("alice private") })
        try d.waitUntil("bob's webhook hears of his memo") { receiver.requests.contains { $0["body"]?["record"]?["memo"] == "bob public" } }
        #expect(receiver.requests.allSatisfy { $0["body"]?["record"]?["owner"] == .string(bob) && $0["signature_ok"] == true })
        #expect(d.stop().status == 0)
    }

    @Test func aQueueFileOthersMayWriteIsRefusedAndShownInStatus() throws {
        let d = try start()
        let file = d.home + "/queue.d/open.jsonl"
        try appendLine(bob, #"{"memo":"from an open file"}"#, to: file, umask: "000")  // created mode 0666
        try d.waitUntil("status names the refused file") {
            let files = try json(d, ["status"])["queue_files"]?.arrayValue ?? []
            return files.contains { $0["name"] == "queue.d/open.jsonl" && $0["error"]?.stringValue?.contains("chmod go-w") == true }
        }
        #expect(try d.jobs().isEmpty)
        #expect(try DaemonHarness.run(as: bob, ["/bin/chmod", "644", file]).0 == 0)
        // What was appended while anyone could write it is not read as bob's: quarantined.
        try d.waitUntil("the open file's line is quarantined") { d.quarantined().count == 1 }
        try d.waitUntil("status shows the file read again") {
            (try json(d, ["status"])["queue_files"]?.arrayValue ?? []).contains { $0["name"] == "queue.d/open.jsonl" && $0["error"] == .null }
        }
        try appendLine(bob, #"{"memo":"once it is his alone"}"#, to: file, umask: "022")
        try d.waitIdle(jobs: 1)
        #expect(try d.jobs().first?.memo.contains("once it is his alone") == true)
        #expect(d.stop().status == 0)
    }

    /// One user cannot take every descriptor: past 32 connections of theirs the daemon
    /// hangs up at once (with a log line), while others and admins still get in.
    @Test func aUserHasAtMostThirtyTwoConnections() throws {
        let d = try start()
        let script = """
            import socket, sys, time
            socks = []
            for i in range(40):
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); socks.append(s)
            time.sleep(1.5)
            closed = 0
            for s in socks:
                s.setblocking(False)
                try:
                    if s.recv(1) == b"": closed += 1
                except BlockingIOError: pass
            print(closed, flush=True)
            time.sleep(float(sys.argv[2]))
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
        p.arguments = ["-u", bob, "-g", "nogroup", "--", "/usr/bin/python3", "-c", script, d.home + "/photomemo.sock", "4"]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        Thread.sleep(forTimeInterval: 2.5)  // bob holds his connections
        #expect(try cliJSON(alice, d, ["status"])["version"] != nil, "another user still gets in")
        #expect(try json(d, ["status"])["clients"]?["connected"]?.intValue ?? 0 >= 32)
        p.waitUntilExit()
        let closed = Int(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(closed == 8, "connections refused: \(String(describing: closed))")
        #expect(d.log.contains("refusing a control connection from uid"))
        #expect(d.stop().status == 0)
    }

    /// One user's webhooks that never answer cannot hold every delivery slot: another
    /// user's notification still goes out at once.
    @Test func aUsersTarpitWebhooksDoNotDelayOthers() throws {
        let d = try start(["--allow-private-webhooks"])  // the tarpit and the receiver are on loopback
        // A loopback listener that never accepts: each POST to it hangs until curl's timeout.
        let tarpit = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(tarpit) }
        var addr = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(tarpit, $0, len) } }
        listen(tarpit, 64)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(tarpit, $0, &len) } }
        let port = UInt16(bigEndian: addr.sin_port)
        for i in 0..<10 {
            #expect(try cli(bob, d, ["subscribe", "--type", "Memo", "--fires-on", "create", "--webhook", "http://127.0.0.1:\(port)/t\(i)",
                                     "--secret", "s"]).0 == 0)
        }
        let receiver = try Receiver(dir: d.root, secret: "alices", failFirst: 0)
        #expect(try cli(alice, d, ["subscribe", "--type", "Memo", "--fires-on", "create", "--webhook", receiver.url, "--secret", "alices"]).0 == 0)
        #expect(try cli(bob, d, ["enqueue", "--memo", "tarpit bait"]).0 == 0)
        Thread.sleep(forTimeInterval: 1)  // bob's ten deliveries are hanging now
        let sent = Date()
        #expect(try cli(alice, d, ["enqueue", "--memo", "alice on time"]).0 == 0)
        try d.waitUntil("alice's webhook hears of her memo", timeout: 20) {
            receiver.requests.contains { $0["body"]?["record"]?["memo"] == "alice on time" }
        }
        #expect(Date().timeIntervalSince(sent) < 6, "alice waited \(Date().timeIntervalSince(sent)) s behind bob's tarpits")
        #expect(d.stop().status == 0)
    }

    /// A user's webhook cannot make the daemon POST into its own host or private networks
    /// (SSRF: local admin APIs, cloud metadata at 169.254.169.254): refused at subscribe
    /// however the address is spelled, and again at each delivery, so a subscription made
    /// while an admin allowed it (or a name that resolves to loopback later) reaches nothing.
    @Test func aUsersWebhookIntoLoopbackOrPrivateHostsIsRefused() throws {
        let d = try start(["--allow-private-webhooks"])
        let receiver = try Receiver(dir: d.root, secret: "s", failFirst: 0)
        let port = receiver.port
        #expect(try cli(bob, d, ["subscribe", "--type", "Memo", "--fires-on", "create", "--webhook", receiver.url, "--secret", "s"]).0 == 0)
        #expect(d.stop().status == 0)
        try d.start(args: ["--socket-group", "nogroup"])  // the same home, without the admin's permission
        for url in ["http://127.0.0.1:\(port)/hook", "http://localhost:\(port)/hook", "http://[::1]:\(port)/", "http://[::ffff:127.0.0.1]:\(port)/",
                    "http://2130706433:\(port)/", "http://0.0.0.0:\(port)/", "http://169.254.169.254/latest/meta-data/",
                    "http://10.1.2.3/", "http://192.168.0.1/", "http://[fe80::1]/", "http://[fd00::1]/"] {
            let (status, _, err) = try cli(bob, d, ["subscribe", "--type", "Memo", "--webhook", url, "--secret", "s"])
            #expect(status == 1 && err.contains("may not point at loopback, link-local or private addresses"), "\(url): \(err)")
        }
        #expect(try json(d, ["subscribe", "--type", "Memo", "--webhook", "http://127.0.0.1:1/admin", "--secret", "s"])["id"] != nil, "an admin may")
        // Bob's older subscription to the loopback receiver: its delivery is refused, unsent.
        #expect(try cli(bob, d, ["enqueue", "--memo", "bob hook"]).0 == 0)
        try d.waitUntil("bob's delivery is refused") {
            let subs = try cliJSON(bob, d, ["subscriptions"])["subscriptions"]?.arrayValue ?? []
            return subs.contains { $0["failed"]?.intValue == 1 && $0["last_error"]?.stringValue?.contains("127.0.0.1 is a loopback address") == true }
        }
        #expect(receiver.requests.isEmpty, "\(receiver.requests)")
        #expect(d.stop().status == 0)
    }
}
