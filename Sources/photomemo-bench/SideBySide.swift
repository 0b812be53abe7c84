import Foundation
import StageKit

/// Every tool on the same files in one run; a table of photos/s, CPU ms per photo, peak
/// RSS and CPU ratios, photomemo (1 worker) being the reference.
enum SideBySide {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ d: String) { description = d }
    }

    struct Row {
        let name: String
        let m: Measurement?
        let note: String
    }

    static func run(files: [String], rounds: Int, json: Bool) throws {
        let scratch = NSTemporaryDirectory() + "photomemo-bench-out-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let me = CommandLine.arguments[0]
        let n = Double(files.count)
        func out(_ name: String) -> String {
            let d = scratch + "/" + name
            try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
            return d
        }
        // Warm the page cache (in a child: the bench itself stays small) so no tool pays for disk reads.
        var warm = Measurement()
        spawn(["cat"] + files, into: &warm)

        // Each tool is a closure that adds one full pass over the files to a Measurement.
        var tools: [(name: String, run: ((inout Measurement) -> Void)?, note: String)] = []
        for w in [1, 2] {
            tools.append(("photomemo compress, \(w) worker\(w == 1 ? "" : "s")", { m in
                measure([me, "--worker", String(w), "--out", out("photomemo\(w)")] + files, into: &m)
            }, ""))
        }
        if let vt = which("vipsthumbnail") {
            tools.append(("vipsthumbnail (2 passes)", { m in
                let o = out("vipsthumbnail")
                measure([vt, "-s", "860x100000", "-o", o + "/%s_d.jpg[Q=90,optimize_coding,strip]"] + files, into: &m)
                measure([vt, "-s", "200x200", "--smartcrop", "centre", "-o", o + "/%s_t.jpg[Q=70,optimize_coding,strip]"] + files, into: &m)
            }, ""))
        } else {
            tools.append(("vipsthumbnail", nil, "not installed (apt-get install libvips-tools)"))
        }
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/convert") {
            tools.append(("ImageMagick convert (jpeg:size)", { m in
                let o = out("convert")
                for (i, f) in files.enumerated() {
                    // One decode at a DCT scale (jpeg:size), both renditions from it.
                    measure(["/usr/bin/convert", "-define", "jpeg:size=1720x1720", f, "-auto-orient", "-strip",
                             "(", "+clone", "-thumbnail", "200x200^", "-gravity", "center", "-extent", "200x200",
                             "-quality", "70", "-write", o + "/\(i)_t.jpg", "+delete", ")",
                             "-resize", "860x", "-quality", "90", o + "/\(i)_d.jpg"], into: &m)
                }
            }, ""))
        } else {
            tools.append(("ImageMagick convert", nil, "not installed (apt-get install imagemagick)"))
        }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("bench/pillow_draft.py").path
        var pillowCheck = Measurement()
        spawn(["python3", "-c", "import PIL"], into: &pillowCheck)
        if pillowCheck.failures == 0 && FileManager.default.fileExists(atPath: script) {
            tools.append(("Pillow with draft()", { m in measure(["python3", script, out("pillow")] + files, into: &m) }, ""))
        } else {
            tools.append(("Pillow", nil, "not installed (python3 -m pip install pillow), or bench/pillow_draft.py missing"))
        }

        // Worker scaling is a daemon's steady state: four passes per process, so the one-time
        // start (loading libvips, ~0.1 s) weighs little against 2 workers' shorter run.
        let passes = 4
        let scaling = [1, 2].map { w in { (m: inout Measurement) in
            measure([me, "--worker", String(w), "--out", out("scaling\(w)")] + Array(repeating: files, count: passes).flatMap { $0 }, into: &m)
        } }

        // Rounds interleave the tools, so a burst of load on this shared machine hits all of
        // them alike; each tool keeps its least-CPU round (the scaling runs their fastest).
        var best: [Measurement?] = Array(repeating: nil, count: tools.count)
        var fastest: [Measurement?] = [nil, nil]
        for round in 1...rounds {
            StandardStream.err("round \(round)/\(rounds)\r")
            for (i, t) in tools.enumerated() {
                guard let run = t.run else { continue }
                var m = Measurement()
                run(&m)
                if best[i] == nil || m.cpu < best[i]!.cpu { best[i] = m }
            }
            for (i, run) in scaling.enumerated() {
                var m = Measurement()
                run(&m)
                if fastest[i] == nil || m.wall < fastest[i]!.wall { fastest[i] = m }
            }
        }
        let steadyScaling = fastest[0]!.wall / fastest[1]!.wall
        let rows = tools.enumerated().map { Row(name: $1.name, m: best[$0], note: $1.note) }
        let reference = rows[0].m!.cpu
        let pillowCPU = rows.first { $0.name.hasPrefix("Pillow with") }?.m?.cpu
        if json {
            var list: [JSONValue] = []
            for r in rows {
                guard let m = r.m else { list.append(["tool": .string(r.name), "skipped": .string(r.note)]); continue }
                list.append(["tool": .string(r.name), "photos": .int(Int64(files.count)), "photos_per_s": .double(n / m.wall),
                             "cpu_ms_per_photo": .double(m.cpu * 1000 / n), "peak_rss_mb": .double(Double(m.peakRSSKB) / 1024),
                             "cpu_vs_photomemo": .double(m.cpu / reference), "failures": .int(Int64(m.failures))])
            }
            print(JSONValue.object(["date": .string(isoTimestamp(unixNow())), "cores": .int(Int64(ProcessInfo.processInfo.activeProcessorCount)), "rounds": .int(Int64(rounds)),
                                    "results": .array(list), "two_worker_scaling": ["one_pass": .double(rows[0].m!.wall / rows[1].m!.wall),
                                                                                   "passes": .int(Int64(passes)), "steady": .double(steadyScaling)]]).jsonString)
            return
        }
        print("\(files.count) photos (JPEG), best of \(rounds) interleaved rounds; display 860 px wide q90 + 200x200 centre crop q70; \(ProcessInfo.processInfo.activeProcessorCount) cores")
        print("tool".padding(toLength: 34, withPad: " ", startingAt: 0) + "photos/s   CPU ms/photo   peak RSS   CPU vs photomemo")
        for r in rows {
            guard let m = r.m else { print(r.name.padding(toLength: 34, withPad: " ", startingAt: 0) + "skipped: " + r.note); continue }
            print(r.name.padding(toLength: 34, withPad: " ", startingAt: 0)
                + String(format: "%8.1f   %12.1f   %5.0f MB   %6.2fx", n / m.wall, m.cpu * 1000 / n, Double(m.peakRSSKB) / 1024, m.cpu / reference)
                + (m.failures > 0 ? "  (\(m.failures) failures)" : ""))
        }
        let one = rows[0].m!, two = rows[1].m!
        print(String(format: "2 workers / 1 worker throughput: %.2fx in one pass (process start included), %.2fx over %d passes (target ≥ 1.8x)",
                     one.wall / two.wall, steadyScaling, passes))
        if let pillowCPU { print(String(format: "photomemo CPU per photo / Pillow's: %.2fx (target ≤ 0.85x)", reference / pillowCPU)) }
    }
}

/// RSS of 2 workers over many photos: sampled every 100, to see that it stays flat.
enum Soak {
    static func run(files: [String], photos: Int, json: Bool) throws {
        let scratch = NSTemporaryDirectory() + "photomemo-bench-soak-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let samples = LockedValue<[(Int, Int)]>([])
        let start = Date()
        let failures = try compressAll(files, workers: 2, out: scratch, repeatUntil: photos) { done in
            samples.withLock { $0.append((done, currentRSSKB())) }
        }
        let s = samples.value
        let wall = Date().timeIntervalSince(start)
        if json {
            print(JSONValue.object(["photos": .int(Int64(photos)), "seconds": .double(wall), "failures": .int(Int64(failures)),
                                    "rss_mb": .array(s.map { ["after": .int(Int64($0.0)), "mb": .double(Double($0.1) / 1024)] })]).jsonString)
            return
        }
        print("soak: \(photos) photos, 2 workers, \(String(format: "%.1f", wall)) s, \(failures) failures")
        print("RSS (MB) every 100 photos: " + s.map { String(format: "%.0f", Double($0.1) / 1024) }.joined(separator: " "))
        if let first = s.first, let last = s.last {
            print(String(format: "first %.0f MB, last %.0f MB, peak %.0f MB", Double(first.1) / 1024, Double(last.1) / 1024,
                         Double(s.map(\.1).max()!) / 1024))
        }
    }
}
