import CompressStage
import Foundation
import Glibc
import StageKit

/// `--fairness`'s rows for the attacks on memory and disk: decode bombs, an alert
/// template of memos, a `.fill.part` that grows. Each starts now and returns how to stop it.
extension FairnessBench {
    static func memoryAndDiskAttacks(seconds: Int) -> [(String, (BenchDaemon) -> () -> Void)] {
        [
            ("40 distinct 4 KB WebP bombs claiming 10000x10000, 3 progressive 24 MP JPEGs", { d in
                let bombs = d.home + "/bombs"
                try? FileManager.default.createDirectory(atPath: bombs, withIntermediateDirectories: true)
                for i in 0..<3 {
                    try? SyntheticPhoto.write(to: bombs + "/p\(i).jpg", width: 6000, height: 4000, seed: 90 + i, quality: 60, progressive: true)
                }
                for i in 0..<40 {
                    let head = webpHeader(width: 10_000, height: 10_000)
                    _ = FileManager.default.createFile(atPath: bombs + "/b\(i).webp", contents: Data(head + [UInt8](repeating: UInt8(i), count: 4096 - head.count)))
                }
                for name in (try? FileManager.default.contentsOfDirectory(atPath: bombs)) ?? [] {
                    dropAsAttacker(d, from: bombs + "/" + name, as: name)
                }
                return {}
            }),
            ("an alert template of 170 x {memo} and a 1 MB memo a second", { d in
                let template = String(repeating: "{memo}", count: 1024 / 6)
                let follower = runAsAttacker(["/usr/bin/python3", "-c", """
                    import json, socket, sys, time
                    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                    s.sendall((json.dumps({"id": 1, "cmd": "subscribe", "type": "Memo", "fires_on": "create", "alert": sys.argv[2]}) + "\\n").encode())
                    while s.recv(1 << 16): pass
                    """, d.home + "/photomemo.sock", template])
                let file = attackersQueueFile(d)
                let done = LockedValue(false)
                Thread {
                    var n = 0
                    while !done.value, let h = FileHandle(forWritingAtPath: file) {
                        n += 1
                        h.seekToEndOfFile()
                        h.write(Data((JSONValue.object(["memo": .string(String(repeating: "\(n) memo ", count: 140_000))]).jsonString + "\n").utf8))
                        try? h.close()
                        Thread.sleep(forTimeInterval: 1)
                    }
                }.start()
                return { done.value = true; follower?.terminate(); follower?.waitUntilExit() }
            }),
            ("dd into inbox/.fill.part, 10 MB a second", { d in
                let fill = d.home + "/inbox/.fill.part"
                _ = FileManager.default.createFile(atPath: fill, contents: nil, attributes: [.posixPermissions: 0o644])
                _ = uid(attacker).map { chown(fill, $0, UInt32.max) }
                let done = LockedValue(false)
                Thread {
                    guard let h = FileHandle(forWritingAtPath: fill) else { return }
                    while !done.value {
                        h.write(Data(count: 1 << 20))
                        Thread.sleep(forTimeInterval: 0.1)
                    }
                }.start()
                return { done.value = true }
            }),
        ]
    }

    /// A WebP header (RIFF, VP8X) claiming `width` x `height`.
    static func webpHeader(width: Int, height: Int) -> [UInt8] {
        let le = { (v: Int, n: Int) in (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        let payload = Array("WEBPVP8X".utf8) + le(10, 4) + [0, 0, 0, 0] + le(width - 1, 3) + le(height - 1, 3)
        return Array("RIFF".utf8) + le(payload.count, 4) + payload
    }

    /// Copies `file` into the inbox as the attacker's, under a hidden name, then renames it in.
    static func dropAsAttacker(_ d: BenchDaemon, from file: String, as name: String) {
        let part = d.home + "/inbox/.\(name).part"
        try? FileManager.default.copyItem(atPath: file, toPath: part)
        chmod(part, 0o644)
        _ = uid(attacker).map { chown(part, $0, UInt32.max) }
        rename(part, d.home + "/inbox/" + name)
    }

    /// The attacker's queue file, theirs (its owner is whose lines they are).
    static func attackersQueueFile(_ d: BenchDaemon) -> String {
        let file = d.home + "/queue.d/\(attacker).jsonl"
        _ = FileManager.default.createFile(atPath: file, contents: nil, attributes: [.posixPermissions: 0o644])
        _ = uid(attacker).map { chown(file, $0, UInt32.max) }
        return file
    }

    /// `argv` started as the attacker (group nogroup, the socket's).
    static func runAsAttacker(_ argv: [String]) -> Process? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
        p.arguments = ["-u", attacker, "-g", "nogroup", "--"] + argv
        p.standardOutput = FileHandle.nullDevice
        return (try? p.run()) == nil ? nil : p
    }
}
