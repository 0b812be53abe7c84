import Foundation
import Glibc
import CompressStage
import PhotomemoCore
import StageKit

/// `--e2e N`: N photos dropped into a real daemon running the default job, beside
/// `djpeg -scale 1/4` (the issue's decode floor), djpeg at the scale compress decodes each
/// photo at (1/4, or 3/8 for a portrait), and bench/pillow_ingest.py (Pillow doing the same
/// job, one process per core) on the same files in the same run; then drop → create-event
/// latency, and RSS over a long run (`--soak M`). Prints a table for docs/benchmarks.md with ratios.
enum E2E {
    struct Tool {
        var photosPerSecond = 0.0, cpuMsPerPhoto = 0.0, failures = 0
        var stages: [String: Double] = [:]  // CPU ms per photo by stage (daemon only)
        /// Journal write transactions a photo (all, durable), from its metrics; fsyncs a photo (strace).
        var transactions: (all: Double, durable: Double)?
        var syncs: Double?
        var peakRSSKB = 0                   // the daemon's VmHWM (daemon only)
        var hashPasses = 0.0                // SHA-256 bytes over the photos' bytes (daemon only)
    }

    static let stageOrder = ["validate", "compress", "upload", "index", "notify", "other"]

    /// `before`: another photomemo binary (main's, built in a worktree) run in the same rounds,
    /// for a live before/after; without it the chart's "before" is the recorded one.
    static func run(files: [String], rounds: Int, soak: Int?, chart: String, before: String?, json: Bool) throws {
        let scratch = NSTemporaryDirectory() + "photomemo-e2e-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let binary = try photomemoBinary()
        let load = loadAverage()
        var warm = Measurement()
        spawn(["cat"] + files, into: &warm)
        let n = Double(files.count)
        var best: [String: Tool] = [:]
        var perRound: [[String: Tool]] = []  // the machine's speed drifts: each round's ratios are one sample
        func keep(_ name: String, _ t: Tool) {
            if best[name].map({ t.cpuMsPerPhoto < $0.cpuMsPerPhoto }) ?? true { best[name] = t }
            perRound[perRound.count - 1][name] = t
        }
        let djpeg = which("djpeg") != nil
        let floors = djpeg ? (scale: "1/4", own: try ownScales(files, scratch: scratch)) : nil
        for round in 0..<rounds {
            perRound.append([:])
            for (name, t) in try floorAndDaemons(files, round: round, rounds: rounds, floor: floors, binary: binary,
                                                 before: before, scratch: scratch) {
                keep(name, t)
            }
            if let script = pillowScript() {
                StandardStream.err("round \(round + 1)/\(rounds): Pillow   \r")
                let out = scratch + "/pillow-\(round)"
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
                // The script moves originals into its store: it works on copies.
                let copies = try files.enumerated().map { i, f in
                    let c = out + "/in-\(i).jpg"
                    try FileManager.default.copyItem(atPath: f, toPath: c)
                    return c
                }
                var m = Measurement()
                measure(["python3", script, out + "/home", "2"] + copies, into: &m)
                keep("pillow", Tool(photosPerSecond: n / m.wall, cpuMsPerPhoto: m.cpu / n * 1000, failures: m.failures))
                try? FileManager.default.removeItem(atPath: out)
            }
        }
        // Counted, not timed: a pass of each daemon with strace attached.
        for (name, path) in [("photomemo", binary)] + (before.map { [("before", $0)] } ?? []) {
            StandardStream.err("fsyncs: \(name)          \r")
            best[name]?.syncs = try syncsPerPhoto(files, home: scratch + "/syncs-\(name)", binary: path)
        }
        StandardStream.err("latency: 20 small photos, 300 ms apart\r")
        let latency = try Latency.run(home: scratch + "/latency", binary: binary)
        let latencyBefore = try before.map { try Latency.run(home: scratch + "/latency-before", binary: $0) }
        var rss: (first: Int, last: Int, peak: Int, photos: Int, rate: Double)?
        if let soak {
            rss = try daemonSoak(files, photos: soak, home: scratch + "/soak", binary: binary)
        }
        StandardStream.err(String(repeating: " ", count: 60) + "\r")
        let report = Report(count: files.count, rounds: rounds, load: load, tools: best, perRound: perRound, latency: latency,
                            latencyBefore: latencyBefore, rss: rss)
        let floor = best["djpeg"]?.cpuMsPerPhoto
        if let b = best["before"] {
            try Chart.write(before: (b.stages, "before (--before, this run)", floor), after: (best["photomemo"]?.stages ?? [:], floor), to: chart)
        } else {
            try Chart.write(before: (Chart.before, Chart.beforeLabel, Chart.beforeFloor), after: (best["photomemo"]?.stages ?? [:], floor), to: chart)
        }
        if json { print(String(decoding: try JSONSerialization.data(withJSONObject: report.json, options: [.sortedKeys]), as: UTF8.self)) }
        else { print(report.text + "chart (CPU per photo by stage, before and after): \(chart)") }
    }

    /// The DCT scale ("3/8") compress decodes each file at: 1/4 for a 12 MP landscape, 3/8
    /// for a portrait (its 860 px wide upright base is 1147 px along the stored width); 1/8
    /// and 2/8 for 48 MP.
    static func ownScales(_ files: [String], scratch: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: scratch + "/scales", withIntermediateDirectories: true)
        let stage = try CompressStage(options: StageOptions(validating: [:], against: CompressStage.options, place: "bench"),
                                      environment: StageEnvironment(home: URL(fileURLWithPath: scratch + "/scales")))
        return try files.map { f in
            let photo = try PhotoBytes.read(PhotoFile(f, beneath: (f as NSString).deletingLastPathComponent, owner: nil, seal: nil, maxBytes: 1 << 30),
                                            sha256: try SHA256.hexOfFile(atPath: f).hex, seal: nil)
            guard let eighths = try stage.jpegDecodeEighths(photo) else { throw SideBySide.Failure("\(f) is not a JPEG") }
            return "\(eighths)/8"
        }
    }

    /// One round of the daemons beside the floors (`djpeg -scale` the issue's `floor.scale`,
    /// and at each file's own scale, `floor.own`; nil: not run) on the same files: the floors bracket
    /// the daemons, half the files before them and half after, so a drift of the machine's
    /// speed within the round moves both sides alike; photomemo and `before` swap places
    /// each round. Keyed "photomemo", "before", "djpeg", "djpeg-own".
    static func floorAndDaemons(_ files: [String], round: Int, rounds: Int, floor: (scale: String, own: [String])?, binary: String, before: String?,
                                scratch: String) throws -> [String: Tool] {
        var out: [String: Tool] = [:]
        var fixed = Measurement(), own = Measurement()
        func decode(_ part: Range<Int>) {
            guard let floor else { return }
            StandardStream.err("round \(round + 1)/\(rounds): djpeg    \r")
            for i in part {
                measureCPU(["djpeg", "-scale", floor.scale, "-outfile", "/dev/null", files[i]], into: &fixed)
                measureCPU(["djpeg", "-scale", floor.own[i], "-outfile", "/dev/null", files[i]], into: &own)
            }
        }
        decode(0..<(files.count / 2))
        var daemons = [("photomemo", binary)] + (before.map { [("before", $0)] } ?? [])
        if round % 2 == 1 { daemons.reverse() }
        for (name, path) in daemons {
            StandardStream.err("round \(round + 1)/\(rounds): \(name.padding(toLength: 9, withPad: " ", startingAt: 0))\r")
            out[name] = try daemonRun(files, home: scratch + "/\(name)-\(round)", binary: path)
            try? FileManager.default.removeItem(atPath: scratch + "/\(name)-\(round)")
        }
        decode((files.count / 2)..<files.count)
        let n = Double(files.count)
        if floor != nil {
            out["djpeg"] = Tool(photosPerSecond: n / fixed.wall, cpuMsPerPhoto: fixed.cpu / n * 1000, failures: fixed.failures)
            out["djpeg-own"] = Tool(photosPerSecond: n / own.wall, cpuMsPerPhoto: own.cpu / n * 1000, failures: own.failures)
        }
        return out
    }

    /// One pass: every file staged, the daemon idle, then all dropped at once.
    static func daemonRun(_ files: [String], home: String, binary: String) throws -> Tool {
        let d = try BenchDaemon(home: home, binary: binary)
        for (i, f) in files.enumerated() { try d.stage(f, as: String(format: "p%05d.jpg", i)) }
        try d.start()
        defer { d.stop() }
        let cpu0 = d.cpuSeconds, stages0 = try d.stageCPU(), vips0 = d.threadCPU(named: "libvips worker"), hashed0 = try d.hashedBytes()
        let txns0 = journalTransactions(d)
        let t0 = Date()
        for i in files.indices { try d.drop(String(format: "p%05d.jpg", i)) }
        var ended = (done: 0, failed: 0)
        while ended.done + ended.failed < files.count {
            usleep(50_000)  // each status costs the daemon a little CPU too
            ended = try d.finished()
        }
        let wall = Date().timeIntervalSince(t0)
        let cpu = d.cpuSeconds - cpu0
        let vips = d.threadCPU(named: "libvips worker") - vips0
        var stages1 = try d.stageCPU()
        stages1["compress", default: 0] += vips
        let n = Double(files.count)
        var t = Tool(photosPerSecond: n / wall, cpuMsPerPhoto: cpu / n * 1000, failures: ended.failed)
        for (s, v) in stages1 { t.stages[s] = (v - (stages0[s] ?? 0)) / n * 1000 }
        t.stages["other"] = max(0, t.cpuMsPerPhoto - t.stages.values.reduce(0, +))
        if let a = txns0, let b = journalTransactions(d) { t.transactions = ((b.all - a.all) / n, (b.durable - a.durable) / n) }
        t.peakRSSKB = d.peakRSSKB
        let bytes = files.compactMap { try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int }.reduce(0, +)
        t.hashPasses = Double(try d.hashedBytes() - hashed0) / Double(max(1, bytes))
        return t
    }

    /// The release `photomemo` next to the bench.
    static func photomemoBinary() throws -> String {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("photomemo").path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw BenchDaemon.Failure("\(binary) not found: swift build -c release --product photomemo")
        }
        return binary
    }

    static func pillowScript() -> String? {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("bench/pillow_ingest.py").path
        var check = Measurement()
        spawn(["python3", "-c", "import PIL"], into: &check)
        return check.failures == 0 && FileManager.default.fileExists(atPath: script) ? script : nil
    }

    static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "").split(separator: " ").prefix(3).joined(separator: " ")
    }
}
