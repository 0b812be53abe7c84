import Foundation
import SQLite
import StageKit

extension E2E.Latency {
    /// Where a small photo's drop → create time goes, from the journal's `job_events` of a
    /// latency run (wall clock, as the bench's drop and arrival times): drop → accepted,
    /// then per stage the hop (the previous step's end → its claim), its run (the stage's
    /// own `duration_ms`) and the rest of its step (dispatch, outcome written), and the last
    /// outcome → the follower's event. Each a median over the run's photos, in ms.
    enum Steps {
        static let stages = ["validate", "compress", "upload", "index", "notify"]

        static func of(_ sample: Sample, journal: String) throws -> [(String, Double)] {
            try each(sample, journal: journal).map { ($0.0, median($0.1)) }
        }

        /// Each step's values, one per photo.
        static func each(_ sample: Sample, journal: String) throws -> [(String, [Double])] {
            let db = try Database(path: journal, readOnly: true)
            // Jobs are taken in drop order: the k-th accepted job is the k-th drop.
            let rows = try db.query("SELECT job_id, at, stage, event, duration_ms FROM job_events ORDER BY job_id, id")
            var jobs: [Int64: [(at: Double, stage: String?, event: String, ms: Double?)]] = [:]
            for r in rows { jobs[r.int(0)!, default: []].append((r.double(1)!, r.string(2), r.string(3)!, r.double(4))) }
            var parts: [String: [Double]] = [:]
            for (k, id) in jobs.keys.sorted().enumerated() where k < sample.dropped.count && k < sample.arrived.count {
                let events = jobs[id]!
                guard let accepted = events.first(where: { $0.event == "accepted" }) else { continue }
                parts["drop → accepted", default: []].append((accepted.at - sample.dropped[k]) * 1000)
                var last = accepted.at
                for stage in stages {
                    guard let started = events.first(where: { $0.stage == stage && $0.event == "started" }),
                          let ended = events.last(where: { $0.stage == stage && $0.event != "started" }) else { continue }
                    let run = ended.ms ?? 0
                    parts["\(stage): hop", default: []].append((started.at - last) * 1000)
                    parts["\(stage): run", default: []].append(run)
                    parts["\(stage): dispatch + outcome", default: []].append((ended.at - started.at) * 1000 - run)
                    last = ended.at
                }
                parts["last outcome → follower", default: []].append((sample.arrived[k] - last) * 1000)
            }
            let order = ["drop → accepted"] + stages.flatMap { ["\($0): hop", "\($0): run", "\($0): dispatch + outcome"] }
                + ["last outcome → follower"]
            return order.compactMap { name in parts[name].map { (name, $0) } }
        }

        static func median(_ values: [Double]) -> Double {
            let s = values.sorted()
            return s.isEmpty ? 0 : s[s.count / 2]
        }
    }
}

/// `--latency [--rounds R] [--before PHOTOMEMO]`: the end-to-end bench's latency part alone
/// (20 small photos, 300 ms apart, on an idle daemon), each round running this build and
/// `--before` one after the other (the order turned each round), with the per-step medians.
enum LatencyBench {
    static func run(rounds: Int, before: String?, json: Bool) throws {
        let scratch = NSTemporaryDirectory() + "photomemo-latency-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var builds = [("photomemo", try E2E.photomemoBinary())] + (before.map { [("before", $0)] } ?? [])
        var all: [String: [Double]] = [:], steps: [String: [[(String, [Double])]]] = [:]
        let load = E2E.loadAverage()
        for round in 0..<rounds {
            for (name, binary) in builds {
                StandardStream.err("round \(round + 1)/\(rounds): \(name)        \r")
                let home = scratch + "/\(name)-\(round)"
                let sample = try E2E.Latency.measure(home: home, binary: binary)
                all[name, default: []] += sample.ms
                steps[name, default: []].append(try E2E.Latency.Steps.each(sample, journal: home + "/photomemo.sqlite"))
                try? FileManager.default.removeItem(atPath: home)
            }
            builds.reverse()
        }
        var out = "photomemo latency, drop → create at a follower, 20 small photos (640x480) 300 ms apart × \(rounds) rounds, load average \(load)\n"
        var o: [String: Any] = ["load": load, "rounds": rounds]
        for name in ["photomemo", "before"] {
            guard let ms = all[name] else { continue }
            let s = ms.sorted()
            let p50 = s[s.count / 2], max = s.last!
            out += String(format: "%@: p50 %.1f ms, p90 %.1f ms, max %.1f ms (target p50 ≤ 20, max ≤ 60)\n",
                          name, p50, s[Int(Double(s.count - 1) * 0.9)], max)
            // Per step, the median of the rounds' medians, and the largest of any photo.
            let names = steps[name]!.first!.map(\.0)
            var byStep: [String: Double] = [:]
            for step in names {
                let each = steps[name]!.compactMap { $0.first { $0.0 == step }?.1 }
                let v = E2E.Latency.Steps.median(each.map(E2E.Latency.Steps.median))
                byStep[step] = v
                out += "    " + step.padding(toLength: 30, withPad: " ", startingAt: 0)
                    + String(format: "%7.2f ms (max %.1f)\n", v, each.flatMap { $0 }.max() ?? 0)
            }
            o[name] = ["p50": p50, "max": max, "all": ms, "steps": byStep]
        }
        if json { print(String(decoding: try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys]), as: UTF8.self)) }
        else { print(out, terminator: "") }
    }
}
