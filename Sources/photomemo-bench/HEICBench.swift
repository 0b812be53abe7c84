import Foundation
import StageKit

/// `--heic DIR`: CPU per photo for the HEIC files in DIR (and copies of each with a trailing
/// `free` box: valid files with new bytes, no synthetic HEICs), side by side in one run:
/// photomemo's compress (its HEIF path, and libvips' heifload as before it), libvips doing
/// only the image work (vipsthumbnail to 860 wide, then the 200x200 from that), and the
/// floor: every tile decoded to YCbCr by one decoder on one thread, discarded (libavcodec,
/// which compress uses, and libde265, which libheif uses). Ratios are to the first floor.
/// Each tool is one process over all files `passes` times (its start is in its CPU, spread
/// over the photos); rounds interleave the tools, each keeps its least-CPU round.
enum HEICBench {
    static func run(dir: String, copies: Int, rounds: Int, json: Bool) throws {
        let scratch = NSTemporaryDirectory() + "photomemo-bench-heic-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try FileManager.default.createDirectory(atPath: scratch + "/in", withIntermediateDirectories: true)
        let originals = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.lowercased().hasSuffix(".heic") }.sorted()
        guard !originals.isEmpty else { throw SideBySide.Failure("no .heic files in \(dir)") }
        var files: [String] = []
        for name in originals {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name))
            for c in 0..<max(1, copies) {
                // A `free` box of 8 + 16c bytes after the last box: ignored by readers.
                var copy = bytes
                let size = UInt32(8 + 16 * c)
                if c > 0 { copy += withUnsafeBytes(of: size.bigEndian) { Data($0) } + Data("free".utf8) + Data(count: 16 * c) }
                let path = scratch + "/in/\(c)-" + name
                try copy.write(to: URL(fileURLWithPath: path))
                files.append(path)
            }
        }
        let passes = 3
        let all = Array(repeating: files, count: passes).flatMap { $0 }
        let n = Double(all.count)
        let me = CommandLine.arguments[0]
        func out(_ name: String) -> String {
            let d = scratch + "/" + name
            try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
            return d
        }
        var tools: [(name: String, run: (inout Measurement) -> Void)] = [
            ("photomemo compress, HEIF path", { measure([me, "--worker", "1", "--out", out("direct")] + all, into: &$0) }),
            ("photomemo compress, libvips heifload", { measure([me, "--worker", "1", "--heic-libvips", "--out", out("vips")] + all, into: &$0) }),
        ]
        if let vt = which("vipsthumbnail") {
            tools.append(("vipsthumbnail 860, then 200x200", { m in
                let o = out("vt")
                measure([vt, "-s", "860x100000", "-o", o + "/%s_d.jpg[Q=90,optimize_coding,strip]"] + all, into: &m)
                let displays = files.map { o + "/" + (($0 as NSString).lastPathComponent as NSString).deletingPathExtension + "_d.jpg" }
                measure([vt, "-s", "200x200", "--smartcrop", "centre", "-o", o + "/%s_t.jpg[Q=70,optimize_coding,strip]"]
                        + Array(repeating: displays, count: passes).flatMap { $0 }, into: &m)
            }))
        }
        tools.append(("floor: libavcodec tiles, 1 thread", { measure([me, "--heic-floor", "libavcodec"] + all, into: &$0) }))
        tools.append(("floor: libde265 tiles, 1 thread", { measure([me, "--heic-floor", "libde265"] + all, into: &$0) }))
        // The worker with no photo: what the peaks above stand on (the "above idle").
        var idle = Measurement()
        measure([me, "--worker", "1", "--out", out("idle")], into: &idle)
        let idleMB = Double(idle.peakRSSKB) / 1024
        let load = E2E.loadAverage()
        var warm = Measurement()
        spawn(["cat"] + files, into: &warm)
        var best: [Measurement?] = Array(repeating: nil, count: tools.count)
        for round in 1...rounds {
            StandardStream.err("round \(round)/\(rounds)\r")
            for (i, t) in tools.enumerated() {
                var m = Measurement()
                t.run(&m)
                if best[i].map({ m.cpu < $0.cpu }) ?? true { best[i] = m }
            }
        }
        let vips = tools.firstIndex { $0.name.hasPrefix("vipsthumbnail") }.flatMap { best[$0]?.cpu }
        let floor = best[tools.firstIndex { $0.name.hasPrefix("floor") }!]!.cpu
        if json {
            let rows: [JSONValue] = tools.enumerated().map { i, t in
                let m = best[i]!
                return ["tool": .string(t.name), "cpu_ms_per_photo": .double(m.cpu * 1000 / n), "peak_rss_mb": .double(Double(m.peakRSSKB) / 1024),
                        "peak_rss_above_idle_mb": .double(Double(m.peakRSSKB) / 1024 - idleMB),
                        "vs_vipsthumbnail": vips.map { .double(m.cpu / $0) } ?? .null, "vs_floor": .double(m.cpu / floor), "failures": .int(Int64(m.failures))]
            }
            print(JSONValue.object(["date": .string(isoTimestamp(unixNow())), "load": .string(load), "photos": .int(Int64(n)),
                                    "rounds": .int(Int64(rounds)), "idle_rss_mb": .double(idleMB), "results": .array(rows)]).jsonString)
            return
        }
        print("\(files.count) HEIC files x \(passes) passes, best of \(rounds) interleaved rounds; load \(load)")
        print("tool".padding(toLength: 40, withPad: " ", startingAt: 0) + "CPU ms/photo   peak RSS (above idle)   vs vipsthumbnail   vs floor")
        for (i, t) in tools.enumerated() {
            let m = best[i]!
            print(t.name.padding(toLength: 40, withPad: " ", startingAt: 0)
                + String(format: "%12.1f   %5.0f MB (%+5.0f MB)   %15@   %7.2fx", m.cpu * 1000 / n, Double(m.peakRSSKB) / 1024,
                         Double(m.peakRSSKB) / 1024 - idleMB,
                         vips.map { String(format: "%.2fx", m.cpu / $0) } ?? "-", m.cpu / floor)
                + (m.failures > 0 ? "  (\(m.failures) failures)" : ""))
        }
        print(String(format: "idle: the compress worker with no photo peaks at %.0f MB", idleMB))
    }
}
