import CVips
import Foundation
import Glibc
import StageKit

extension E2E {
    /// Drop → `create` event at a socket follower, for 20 small photos 300 ms apart on an
    /// otherwise idle daemon. The k-th event belongs to the k-th drop (records are made in order).
    enum Latency {
        static func run(home: String, binary: String) throws -> [Double] { try measure(home: home, binary: binary).ms }

        /// One daemon's run: each drop's latency, and the wall-clock times of its drop and
        /// of its event's arrival (to place the journal's `job_events` between them, `Steps`).
        struct Sample {
            var ms: [Double] = [], dropped: [Double] = [], arrived: [Double] = []
        }

        static func measure(home: String, binary: String) throws -> Sample {
            let d = try BenchDaemon(home: home, binary: binary)
            let count = 20
            for i in 0..<count {
                let path = home + "/staging/s\(i).jpg"
                guard pm_vips_synthetic_photo(path, 640, 480, 1, Int32(1000 + i), 85, 0) == 0 else {
                    throw BenchDaemon.Failure("cannot make a small photo: \(String(cString: vips_error_buffer()))")
                }
            }
            try d.start()
            defer { d.stop() }
            let follower = Process()
            follower.executableURL = URL(fileURLWithPath: binary)
            follower.arguments = ["subscribe", "--type", "Photo", "--fires-on", "create", "--follow", "--json", "--home", home]
            let pipe = Pipe()
            follower.standardOutput = pipe
            follower.standardError = FileHandle.nullDevice
            try follower.run()
            defer { follower.terminate(); follower.waitUntilExit() }
            let arrivals = LockedValue<[(Double, Double)]>([])  // monotonic, wall
            let reader = Thread {
                var pending = Data()
                while true {
                    let chunk = pipe.fileHandleForReading.availableData
                    if chunk.isEmpty { return }
                    pending.append(chunk)
                    while let nl = pending.firstIndex(of: 0x0A) {
                        let line = pending[pending.startIndex..<nl]
                        pending = Data(pending[(nl + 1)...])
                        if String(decoding: line, as: UTF8.self).contains("\"create\"") {
                            arrivals.withLock { $0.append((now(), Date().timeIntervalSince1970)) }
                        }
                    }
                }
            }
            reader.start()
            usleep(500_000)  // the subscription is in place
            var drops: [(Double, Double)] = []
            for i in 0..<count {
                drops.append((now(), Date().timeIntervalSince1970))
                try d.drop("s\(i).jpg")
                usleep(300_000)
            }
            for _ in 0..<50 where arrivals.value.count < count { usleep(100_000) }
            let got = arrivals.value
            guard got.count >= count else { throw BenchDaemon.Failure("only \(got.count) of \(count) create events arrived") }
            return Sample(ms: zip(drops, got).map { ($1.0 - $0.0) * 1000 }, dropped: drops.map(\.1), arrived: got.prefix(count).map(\.1))
        }

        static func now() -> Double {
            var ts = timespec()
            clock_gettime(CLOCK_MONOTONIC, &ts)
            return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
        }
    }

    /// RSS of the daemon over `photos` drops (unique bytes each: a repeat would be a
    /// duplicate and skip the work), at most 32 in flight, sampled every 100 done.
    /// The store is emptied behind the daemon's back as it goes, so the disk stays small.
    static func daemonSoak(_ files: [String], photos: Int, home: String, binary: String) throws
        -> (first: Int, last: Int, peak: Int, photos: Int, rate: Double) {
        let d = try BenchDaemon(home: home, binary: binary)
        try d.start()
        defer { d.stop() }
        var dropped = 0, ended = 0, samples: [Int] = []
        let t0 = Date()
        while ended < photos {
            while dropped < photos && dropped - ended < 32 {
                let name = String(format: "k%06d.jpg", dropped)
                try d.stage(files[dropped % files.count], as: name, unique: dropped)
                try d.drop(name)
                dropped += 1
            }
            usleep(100_000)
            let f = try d.finished()
            let now = f.done + f.failed
            if now / 100 > ended / 100 {
                samples.append(d.rssKB)
                StandardStream.err("soak: \(now)/\(photos), RSS \(d.rssKB / 1024) MB   \r")
                if now / 500 > ended / 500 { try? FileManager.default.removeItem(atPath: home + "/store/sha256") }
            }
            ended = now
        }
        let rate = Double(photos) / Date().timeIntervalSince(t0)
        return (samples.first ?? 0, samples.last ?? 0, samples.max() ?? 0, photos, rate)
    }
}
