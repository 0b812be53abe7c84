import Foundation
import Glibc

extension E2E {
    /// The run's table, ratios and the targets (#16), as text for docs/benchmarks.md or JSON.
    struct Report {
        let count: Int, rounds: Int, load: String
        let tools: [String: Tool]
        let perRound: [[String: Tool]]
        let latency: [Double]
        /// The `--before` build's, when given.
        let latencyBefore: [Double]?
        let rss: (first: Int, last: Int, peak: Int, photos: Int, rate: Double)?

        func pct(_ p: Double, of values: [Double]? = nil) -> Double {
            let s = (values ?? latency).sorted()
            return s.isEmpty ? 0 : s[min(s.count - 1, Int(Double(s.count - 1) * p + 0.5))]
        }

        var text: String {
            let date = ISO8601DateFormatter().string(from: Date()).prefix(10)
            var out = "photomemo e2e, \(count) photos, best of \(rounds), \(date), load average \(load)\n\n"
            out += "tool                                   photos/s   CPU ms/photo\n"
            let names = [("photomemo daemon, default job", "photomemo")] + (tools["before"] == nil ? [] : [("photomemo before (--before)", "before")])
                + [("djpeg -scale 1/4 (decode only)", "djpeg"), ("djpeg at each photo's own scale", "djpeg-own"),
                   ("Pillow ingest, 2 processes", "pillow")]
            for (label, key) in names {
                guard let t = tools[key] else { out += label.padding(toLength: 38, withPad: " ", startingAt: 0) + " not run\n"; continue }
                out += label.padding(toLength: 38, withPad: " ", startingAt: 0)
                    + String(format: " %8.1f   %12.1f%@\n", t.photosPerSecond, t.cpuMsPerPhoto, t.failures > 0 ? " (\(t.failures) failed)" : "")
            }
            if let p = tools["photomemo"] {
                out += "\nphotomemo CPU per photo by stage (ms): "
                out += E2E.stageOrder.map { String(format: "%@ %.1f", $0, p.stages[$0] ?? 0) }.joined(separator: ", ") + "\n"
                out += String(format: "photomemo peak RSS %d MB; SHA-256 passes over each photo's bytes: %.2f",
                              p.peakRSSKB / 1024, p.hashPasses)
                    + (tools["before"].map { String(format: " (before: %.2f)\n", $0.hashPasses) } ?? "\n")
                if let dj = tools["djpeg"] {
                    out += String(format: "CPU per photo / djpeg floor: %.2fx (target ≤ 1.30x)\n", p.cpuMsPerPhoto / dj.cpuMsPerPhoto)
                }
                if let own = tools["djpeg-own"] {
                    out += String(format: "CPU per photo / djpeg at each photo's own scale: %.2fx\n", p.cpuMsPerPhoto / own.cpuMsPerPhoto)
                }
                if let py = tools["pillow"] {
                    out += String(format: "photos/s / Pillow's: %.2fx (target ≥ 1.50x)\n", p.photosPerSecond / py.photosPerSecond)
                }
                // How busy each keeps the machine on a backlog: photos/s × CPU a photo ÷ cores.
                let cores = Double(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
                for (label, key) in [("photomemo", "photomemo"), ("before", "before"), ("Pillow", "pillow")] {
                    guard let t = tools[key] else { continue }
                    out += String(format: "%@ keeps %.0f%% of %.0f cores busy%@\n", label, t.photosPerSecond * t.cpuMsPerPhoto / 10 / cores, cores,
                                  key == "photomemo" ? " (target ≥ 90%)" : "")
                }
                for (label, key) in [("photomemo", "photomemo"), ("before", "before")] {
                    guard let t = tools[key] else { continue }
                    let txns = t.transactions.map { String(format: "%.1f journal transactions a photo (%.1f durable)", $0.all, $0.durable) }
                        ?? "journal transactions not counted (no metric)"
                    out += "\(label): \(txns), " + (t.syncs.map { String(format: "%.1f fsync + fdatasync a photo (strace)", $0) } ?? "fsyncs not counted") + "\n"
                }
            }
            if perRound.count > 1 {
                out += "per round (djpeg on half the files before the daemons and half after; each round's ratio is one sample):\n"
                out += "  CPU / djpeg: " + ratios("photomemo", "djpeg", \.cpuMsPerPhoto)
                out += "  CPU / djpeg at each photo's own scale: " + ratios("photomemo", "djpeg-own", \.cpuMsPerPhoto)
                if tools["before"] != nil {
                    out += "  CPU / before: " + ratios("photomemo", "before", \.cpuMsPerPhoto)
                    out += "  photos/s / before's: " + ratios("photomemo", "before", \.photosPerSecond)
                }
                out += "  photos/s / Pillow's: " + ratios("photomemo", "pillow", \.photosPerSecond)
            }
            out += String(format: "drop → create event (20 small photos, 300 ms apart): p50 %.0f ms, max %.0f ms (targets ≤ 20, ≤ 60)\n",
                          pct(0.5), latency.max() ?? 0)
            if let b = latencyBefore {
                out += String(format: "the same, before: p50 %.0f ms, max %.0f ms\n", pct(0.5, of: b), b.max() ?? 0)
            }
            if let r = rss {
                out += String(format: "RSS over %d photos: first %d MB, last %d MB, peak %d MB (target peak ≤ 150 MB), %.1f photos/s\n",
                              r.photos, r.first / 1024, r.last / 1024, r.peak / 1024, r.rate)
            }
            return out
        }

        /// `a`'s value over `b`'s in each round, and their median.
        func ratios(_ a: String, _ b: String, _ value: KeyPath<Tool, Double>) -> String {
            let r = perRound.compactMap { round in round[a].flatMap { x in round[b].map { x[keyPath: value] / $0[keyPath: value] } } }
            guard !r.isEmpty else { return "not run\n" }
            return r.map { String(format: "%.2fx", $0) }.joined(separator: " ") + String(format: " (median %.2fx)\n", r.sorted()[r.count / 2])
        }

        var json: [String: Any] {
            var o: [String: Any] = ["photos": count, "rounds": rounds, "load": load,
                                    "latency_ms": ["p50": pct(0.5), "max": latency.max() ?? 0, "all": latency]]
            for (k, t) in tools {
                var tool: [String: Any] = ["photos_per_s": t.photosPerSecond, "cpu_ms_per_photo": t.cpuMsPerPhoto, "failures": t.failures, "stages_ms": t.stages,
                                           "peak_rss_kb": t.peakRSSKB, "hash_passes": t.hashPasses]
                if let x = t.transactions { tool["journal_transactions_per_photo"] = ["all": x.all, "durable": x.durable] }
                if let x = t.syncs { tool["fsyncs_per_photo"] = x }
                o[k] = tool
            }
            if let b = latencyBefore { o["latency_before_ms"] = ["p50": pct(0.5, of: b), "max": b.max() ?? 0, "all": b] }
            if let r = rss { o["rss_kb"] = ["first": r.first, "last": r.last, "peak": r.peak, "photos": r.photos, "photos_per_s": r.rate] }
            return o
        }
    }
}
