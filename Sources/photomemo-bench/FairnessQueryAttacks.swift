import Foundation
import Glibc
import StageKit

/// `--fairness`'s rows for the attacks on query cost: costly queries looped on several
/// connections, and costly subscriptions on the attacker's own type while they write.
extension FairnessBench {
    static func queryAttacks(seconds: Int) -> [(String, (BenchDaemon) -> () -> Void)] {
        let sixtyThousandWords = (0..<60_000).map { "w\($0)" }.joined(separator: " ")
        let contains = "memo CONTAINS \"\(sixtyThousandWords)\""
        let beginsWith = (0..<255).map { _ in "memo BEGINSWITH \"\"" }.joined(separator: " OR ")
        return [
            ("1 connection looping a CONTAINS of 60,000 words", { d in queryLoop(d, connections: 1, predicate: contains, seconds: seconds) }),
            ("2 connections looping 255 x BEGINSWITH \"\" ORed", { d in queryLoop(d, connections: 2, predicate: beginsWith, seconds: seconds) }),
            ("8 connections looping a CONTAINS of 60,000 words", { d in queryLoop(d, connections: 8, predicate: contains, seconds: seconds) }),
            ("10 subscriptions with a 255-word CONTAINS on their own type, a 500 KB memo every 0.5 s", { d in
                let words = (0..<255).map { "w\($0)" }.joined(separator: " ")
                let follower = runAsAttacker(["/usr/bin/python3", "-c", """
                    import json, socket, sys
                    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                    for i in range(10):
                        s.sendall((json.dumps({"id": i, "cmd": "subscribe", "type": "BobThing", "fires_on": "create",
                                               "predicate": 'memo CONTAINS "' + sys.argv[2] + '"'}) + "\\n").encode())
                    while s.recv(1 << 16): pass
                    """, d.home + "/photomemo.sock", words])
                let writer = runAsAttacker(["/usr/bin/python3", "-c", """
                    import json, random, sys, time
                    while True:
                        memo = " ".join("w%d" % random.randrange(300) for _ in range(120000))
                        with open(sys.argv[1], "a") as f: f.write(json.dumps({"type": "BobThing", "memo": memo}) + "\\n")
                        time.sleep(0.5)
                    """, attackersQueueFile(d)])
                return { for p in [follower, writer] { p?.terminate(); p?.waitUntilExit() } }
            }),
        ]
    }

    /// `connections` attacker connections each sending `predicate` as a query and reading
    /// its answer, over and over. The predicate goes through a file: one argument may not
    /// exceed 128 KiB.
    static func queryLoop(_ d: BenchDaemon, connections: Int, predicate: String, seconds: Int) -> () -> Void {
        let file = d.home + "/predicate-\(connections).txt"
        _ = FileManager.default.createFile(atPath: file, contents: Data(predicate.utf8), attributes: [.posixPermissions: 0o644])
        let p = runAsAttacker(["/usr/bin/python3", "-c", """
            import json, socket, sys, threading, time
            end, predicate = time.time() + float(sys.argv[2]), open(sys.argv[3]).read()
            def run():
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile("rwb")
                while time.time() < end:
                    f.write((json.dumps({"id": 1, "cmd": "query", "predicate": predicate, "limit": 10}) + "\\n").encode()); f.flush()
                    f.readline()
            ts = [threading.Thread(target=run) for _ in range(int(sys.argv[4]))]
            [t.start() for t in ts]; [t.join() for t in ts]
            """, d.home + "/photomemo.sock", String(seconds + 5), file, String(connections)])
        return { p?.terminate(); p?.waitUntilExit() }
    }
}
