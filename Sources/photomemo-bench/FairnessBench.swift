import CompressStage
import ControlProtocol
import Foundation
import Glibc
import StageKit

/// `--fairness`: issue 25's table on a real daemon with a real
/// attacker uid ("nobody") and a real victim uid ("daemon"), as root. Each row runs its
/// attack for `seconds` while the victim drops a photo a second (with a memo line that
/// names it first, so the record is found by its field) and measures drop → record.
enum FairnessBench {
    static let attacker = "nobody", victim = "daemon"

    struct Row {
        let attack: String
        var seconds: [Double] = []
        var peakRSSMB = 0.0
        var median: Double { seconds.isEmpty ? .nan : seconds.sorted()[seconds.count / 2] }
        var max: Double { seconds.max() ?? .nan }
    }

    static func uid(_ name: String) -> UInt32? { getpwnam(name).map { $0.pointee.pw_uid } }

    static func run(seconds: Int, json: Bool) throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser") else {
            throw BenchDaemon.Failure("--fairness runs as root (it starts an attacker and a victim uid with runuser)")
        }
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("photomemo").path
        let scratch = NSTemporaryDirectory() + "photomemo-fairness-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        let photo = scratch + "/victim.jpg"
        try SyntheticPhoto.write(to: photo, width: 1600, height: 1200, seed: 7)
        var rows: [Row] = []
        for (name, attack) in attacks(seconds: seconds) {
            let d = try BenchDaemon(home: scratch + "/home", binary: binary)
            d.serveArgs = ["--socket-group", "nogroup"]
            chmod(d.home, 0o755)
            for dir in [d.home + "/inbox", d.home + "/queue.d"] {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                chmod(dir, 0o1777)
            }
            // The victim's queue file, theirs from the start (its owner is whose lines they are).
            let queue = d.home + "/queue.d/\(victim).jsonl"
            _ = FileManager.default.createFile(atPath: queue, contents: nil, attributes: [.posixPermissions: 0o644])
            chown(queue, uid(victim) ?? 1, UInt32.max)
            try d.start()
            defer { d.stop() }
            var row = Row(attack: name)
            let stop = attack(d)
            for i in 0..<max(1, seconds) {
                row.seconds.append(try victimPhoto(d, photo, i))
                row.peakRSSMB = Swift.max(row.peakRSSMB, Double(d.rssKB) / 1024)
                Thread.sleep(forTimeInterval: 1)
            }
            stop()
            rows.append(row)
        }
        if json {
            print(JSONValue.array(rows.map { ["attack": .string($0.attack), "victim_median_s": .double($0.median),
                                              "victim_max_s": .double($0.max), "peak_rss_mb": .double($0.peakRSSMB)] }).jsonString)
            return
        }
        print("| what the attacker did (\(seconds) s) | victim photo → record median / max | daemon peak RSS |")
        print("| --- | --- | --- |")
        for r in rows { print(String(format: "| %@ | %.2f s / %.2f s | %.0f MB |", r.attack, r.median, r.max, r.peakRSSMB)) }
    }

    /// Each attack starts now and returns how to stop it.
    static func attacks(seconds: Int) -> [(String, (BenchDaemon) -> () -> Void)] {
        [
            ("nothing (baseline)", { _ in {} }),
            ("10,000 queue lines a second into their queue.d file", { d in
                let file = attackersQueueFile(d)
                let done = LockedValue(false)
                let thread = Thread {
                    guard let h = FileHandle(forWritingAtPath: file) else { return }
                    var n = 0
                    while !done.value {
                        h.seekToEndOfFile()
                        h.write(Data((0..<1000).map { _ in n += 1; return "{\"memo\":\"flood \(n)\"}\n" }.joined().utf8))
                        Thread.sleep(forTimeInterval: 0.1)
                    }
                }
                thread.start()
                return { done.value = true }
            }),
        ] + queryAttacks(seconds: seconds) + memoryAndDiskAttacks(seconds: seconds)
    }

    /// The victim's memo line naming photo `i`, then the photo (both the victim's): seconds
    /// from the drop to its record (found by its `probe` field), at most 60.
    static func victimPhoto(_ d: BenchDaemon, _ photo: String, _ i: Int) throws -> Double {
        let uid = uid(victim) ?? 1
        let queue = d.home + "/queue.d/\(victim).jsonl"
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: queue))
        h.seekToEndOfFile()
        h.write(Data("{\"photo\":\"v\(i).jpg\",\"memo\":\"victim\",\"fields\":{\"probe\":\"v\(i)\"}}\n".utf8))
        try h.close()
        try d.stage(photo, as: "v\(i).jpg", unique: i)
        chown(d.home + "/staging/v\(i).jpg", uid, UInt32.max)
        Thread.sleep(forTimeInterval: 0.5)  // the memo is read first, and waits for its photo
        let t0 = Date()
        try d.drop("v\(i).jpg")
        let admin = ControlClient(socketPath: d.home + "/photomemo.sock", home: d.home)
        while Date().timeIntervalSince(t0) < 60 {
            let page = try? admin.request(.query, ["predicate": .string("probe == \"v\(i)\""), "limit": 1])
            if !(page?["records"]?.arrayValue ?? []).isEmpty { return Date().timeIntervalSince(t0) }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return 60
    }
}
