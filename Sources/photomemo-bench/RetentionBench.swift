import Foundation
import Journal
import PhotomemoCore
import StageKit
import SQLite

/// The journal's size as finished jobs pile up on SQLite, sampled ten times over `jobs`:
/// without retention, with it (pruned every 500 jobs, as the daemon's minute would under
/// a steady load), and with it on queue lines alone. Photos keep a tombstone (a stored
/// photo's key must stay unique); unkeyed lines leave nothing, so that series is flat.
enum RetentionBench {
    enum Load: String, CaseIterable { case kept = "without retention", pruned = "with retention", linesOnly = "with retention, queue lines only" }
    typealias Series = [(jobs: Int, bytes: Int64)]

    static func run(jobs: Int, chart: String, json: Bool) throws {
        let every = max(500, (jobs / 10 + 499) / 500 * 500)
        var series: [Load: Series] = [:]
        for load in Load.allCases { series[load] = try sizes(jobs: jobs, every: every, load: load) }
        let last = { (l: Load) in series[l]!.last!.bytes }
        let half = { (l: Load) in series[l]!.first { $0.jobs >= jobs / 2 }!.bytes }
        try Chart.write(series, jobs: jobs, to: chart)
        let row: [String: JSONValue] = [
            "jobs": .int(Int64(jobs)), "bytes_without_retention": .int(last(.kept)), "bytes_with_retention": .int(last(.pruned)),
            "bytes_lines_only_with_retention": .int(last(.linesOnly)),
            "bytes_per_job_kept": .int(last(.kept) / Int64(jobs)), "bytes_per_job_pruned": .int(last(.pruned) / Int64(jobs)),
            "lines_only_growth_second_half": .double(Double(last(.linesOnly)) / Double(half(.linesOnly))), "chart": .string(chart),
        ]
        if json { print(JSONValue.object(row).jsonString); return }
        print("retention  \(jobs) jobs on SQLite, journal size every \(every) jobs (chart: \(chart))")
        for load in Load.allCases {
            print("  \(load.rawValue.padding(toLength: 34, withPad: " ", startingAt: 0)) "
                  + series[load]!.map { "\($0.bytes / 1024)" }.joined(separator: " ") + " KiB")
        }
        print("  kept \(last(.kept) / Int64(jobs)) bytes per job; with retention \(last(.pruned) / Int64(jobs)) (photos' tombstones); "
              + String(format: "queue lines only: %.2fx from job %d to %d", Double(last(.linesOnly)) / Double(half(.linesOnly)), jobs / 2, jobs))
    }

    /// Bytes of the journal (file and WAL, checkpointed) each `every` jobs, as `jobs` jobs
    /// go through four stages.
    static func sizes(jobs: Int, every: Int, load: Load) throws -> Series {
        let dir = NSTemporaryDirectory() + "photomemo-bench-retention-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/photomemo.sqlite"
        let journal = try Journal(path: path)
        let db = try Database(path: path)
        var retention = Retention()
        (retention.done, retention.failed, retention.cancelled) = (0, 0, 0)
        let stages = JournalFlow.stages
        let isPhoto = { (i: Int) in load != .linesOnly && i % 2 == 0 }
        var out: Series = []
        for start in stride(from: 0, to: jobs, by: 500) {
            let range = start..<min(jobs, start + 500)
            for chunk in stride(from: range.lowerBound, to: range.upperBound, by: 100) {
                let ids = chunk..<min(range.upperBound, chunk + 100)
                _ = try journal.commitPhotos(ids.filter(isPhoto).map { i in
                    TakenPhoto(name: "photo-\(i).jpg", path: "/inbox/photo-\(i).jpg", identity: "1:\(i):4400000:0",
                               sha256: String(format: "%064x", i))
                })
                _ = try journal.commitMemos(ids.filter { !isPhoto($0) }.map { i in
                    QueuedMemo(memo: MemoJob(memo: "line \(i) of the queue file, a memo of some length", type: "Memo"), photo: .none,
                               key: "queue:queue.jsonl:g0:\(i * 64)", source: "queue.jsonl line \(i)")
                }, position: nil, joinTimeoutSeconds: 600)
            }
            for (index, name) in stages.enumerated() {
                while case let claimed = try journal.claim(stageIndex: index, stageName: name, limit: 100), !claimed.isEmpty {
                    let runs = claimed.map { ($0, StageOutcome.continue(result: ["stage": .string(name), "ms": .int(12)])) }
                    _ = try journal.recordSteps(JobStateMachine.steps(runs, stageCount: stages.count, retry: .default),
                                                stageName: name, durationMs: 12)
                }
            }
            if load != .kept { while try journal.pruneBatch(retention: retention, limit: 500, now: unixNow() + 1).pruned > 0 {} }
            if range.upperBound % every == 0 || range.upperBound == jobs {
                try db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
                let bytes = { (p: String) in ((try? FileManager.default.attributesOfItem(atPath: p))?[.size] as? Int64) ?? 0 }
                out.append((range.upperBound, bytes(path) + bytes(path + "-wal")))
            }
        }
        return out
    }

    /// An SVG line chart of the journal's size against jobs, one line per load.
    enum Chart {
        static let colours: [Load: String] = [.kept: "#e15759", .pruned: "#4e79a7", .linesOnly: "#59a14f"]

        static func write(_ series: [Load: Series], jobs: Int, to path: String) throws {
            let (w, h, left, top, plotW, plotH) = (910.0, 360.0, 70.0, 40.0, 560.0, 260.0)
            let maxBytes = Double(series.values.flatMap { $0.map(\.bytes) }.max() ?? 1)
            let mib = max(1, (maxBytes / 1_048_576).rounded(.up))
            let x = { (j: Int) in left + Double(j) / Double(jobs) * plotW }
            let y = { (b: Int64) in top + plotH - Double(b) / (mib * 1_048_576) * plotH }
            var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(w))" height="\(Int(h))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="10" y="22" font-size="15">photomemo: SQLite journal size as finished jobs pile up</text>
            <line x1="\(left)" y1="\(top + plotH)" x2="\(left + plotW)" y2="\(top + plotH)" stroke="black"/>
            <line x1="\(left)" y1="\(top)" x2="\(left)" y2="\(top + plotH)" stroke="black"/>
            <text x="\(left + plotW / 2 - 20)" y="\(h - 12)">jobs</text>
            <text x="\(left - 8)" y="\(top + plotH + 16)" text-anchor="end">0</text>
            <text x="\(left + plotW)" y="\(top + plotH + 16)" text-anchor="middle">\(jobs)</text>
            <text x="\(left - 6)" y="\(top + 4)" text-anchor="end">\(Int(mib)) MiB</text>

            """
            for load in Load.allCases {
                let points = [(0, Int64(0))] + series[load]!
                svg += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"\(colours[load]!)\" points=\""
                    + points.map { String(format: "%.1f,%.1f", x($0.0), y($0.1)) }.joined(separator: " ") + "\"/>\n"
                if let end = series[load]!.last {
                    svg += String(format: "<text x=\"%.1f\" y=\"%.1f\" fill=\"%@\">%@: %.1f MiB</text>\n",
                                  x(end.jobs) + 6, y(end.bytes) + 4, colours[load]!, load.rawValue, Double(end.bytes) / 1_048_576)
                }
            }
            svg += "</svg>\n"
            try svg.write(toFile: path, atomically: true, encoding: .utf8)
        }
    }
}
