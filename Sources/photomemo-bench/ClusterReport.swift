import Foundation
import PhotomemoCore

/// `--cluster`'s README table, JSON and an SVG of the add → claim latency distribution.
struct ClusterReport {
    let r: ClusterBench.Report

    init(_ r: ClusterBench.Report) { self.r = r }

    func pct(_ p: Double) -> Double {
        r.latency.isEmpty ? .nan : r.latency[min(r.latency.count - 1, Int(Double(r.latency.count) * p))]
    }

    /// Best round of each (fewest seconds), as photos/s and CPU ms per photo.
    func best(_ runs: [DaemonRun.Result]) -> (rate: Double, cpuMs: Double) {
        guard let b = runs.min(by: { $0.wall < $1.wall }) else { return (.nan, .nan) }
        return (Double(r.photos) / b.wall, b.cpu * 1000 / Double(r.photos))
    }

    var ratio: Double { best(r.remote).rate / best(r.local).rate }

    func met(_ ok: Bool) -> String { ok ? "met" : "NOT met" }

    func print(json: Bool, svg: String) throws {
        let local = best(r.local), remote = best(r.remote)
        let p50 = pct(0.5), p99 = pct(0.99), max = r.latency.last ?? .nan
        try chart().write(toFile: svg, atomically: true, encoding: .utf8)
        if json {
            Swift.print(JSONValue.object([
                "date": .string(isoTimestamp(unixNow())), "cores": .int(Int64(ProcessInfo.processInfo.activeProcessorCount)), "uptime": .string(r.uptime),
                "claims_per_s": ["postgres": .double(r.pg.claims), "sqlite": .double(r.sqlite.claims)],
                "claim_record_per_s": ["postgres": .double(r.pg.claimRecord), "sqlite": .double(r.sqlite.claimRecord)],
                "writer_txns_per_s": ["postgres": .double(r.pg.writerTxns), "sqlite": .double(r.sqlite.writerTxns)],
                "notify_latency_ms": ["p50": .double(p50), "p99": .double(p99), "max": .double(max), "samples": .int(Int64(r.latency.count))],
                "photos": .int(Int64(r.photos)),
                "photos_per_s": ["sqlite_local": .double(local.rate), "postgres_s3": .double(remote.rate), "ratio": .double(ratio)],
                "cpu_ms_per_photo": ["sqlite_local": .double(local.cpuMs), "postgres_s3": .double(remote.cpuMs)],
                "per_photo": ["xact_commit": .double(Double(r.perPhoto.xacts) / Double(r.photos)),
                              "tup_inserted": .double(Double(r.perPhoto.inserted) / Double(r.photos)),
                              "tup_updated": .double(Double(r.perPhoto.updated) / Double(r.photos)),
                              "s3_requests": .object(r.s3PerPhoto.mapValues { .double($0) })],
                "idle_daemon": ["seconds": .double(r.idleSeconds), "xact_commit": .int(Int64(r.idle.xacts)),
                                "tup_inserted": .int(Int64(r.idle.inserted)), "tup_updated": .int(Int64(r.idle.updated))],
                "svg": .string(svg),
            ]).jsonString)
            return
        }
        let n = Double(r.photos)
        Swift.print("cluster: \(isoTimestamp(unixNow())), \(ProcessInfo.processInfo.activeProcessorCount) cores, \(r.uptime)")
        Swift.print("PostgreSQL 15 and SeaweedFS on loopback; \(r.photos) photos of 12 MP, best of \(r.local.count) interleaved rounds")
        Swift.print("```")
        Swift.print("measure                                    PostgreSQL     SQLite   target")
        func row(_ name: String, _ pg: Double, _ sq: Double, _ target: String) {
            Swift.print(name.padding(toLength: 40, withPad: " ", startingAt: 0) + String(format: "%12.0f %10.0f   ", pg, sq) + target)
        }
        row("claims/s, batches of 64, 2 hosts", r.pg.claims, r.sqlite.claims, "≥ 10,000: \(met(r.pg.claims >= 10_000))")
        row("claim + record (advance)/s, batches of 64", r.pg.claimRecord, r.sqlite.claimRecord, "")
        row("write transactions/s, 1 job each", r.pg.writerTxns, r.sqlite.writerTxns, "(the one locked writer)")
        Swift.print(String(format: "add → claim via NOTIFY, ms (%d samples)    p50 %.2f  p99 %.2f  max %.2f   ≤ 5 ms p50: %@",
                           r.latency.count, p50, p99, max, met(p50 <= 5)))
        Swift.print("daemon, photos/s (CPU ms/photo)            PG + S3    SQLite + folder")
        Swift.print(String(format: "  per host                           %8.2f (%4.0f)   %8.2f (%4.0f)   ratio %.2fx  ≥ 0.95x: %@",
                           remote.rate, remote.cpuMs, local.rate, local.cpuMs, ratio, met(ratio >= 0.95)))
        Swift.print(String(format: "per photo on PostgreSQL: %.1f transactions, %.1f rows inserted, %.1f rows updated",
                           Double(r.perPhoto.xacts) / n, Double(r.perPhoto.inserted) / n, Double(r.perPhoto.updated) / n))
        Swift.print("per photo to S3: " + r.s3PerPhoto.sorted { $0.key < $1.key }.map { String(format: "%.1f %@", $0.value, $0.key) }.joined(separator: ", "))
        Swift.print(String(format: "(an idle daemon over %.1f s, taken off: %d transactions, %d inserts, %d updates)",
                           r.idleSeconds, r.idle.xacts, r.idle.inserted, r.idle.updated))
        Swift.print("```")
        Swift.print("chart: \(svg)")
    }

    /// The sorted latencies as a line (x: fraction of samples, y: ms), p50 and the target marked.
    func chart() -> String {
        let w = 600.0, h = 300.0, pad = 40.0
        let top = Swift.max(6, (r.latency.last ?? 6) * 1.05)
        func x(_ f: Double) -> Double { pad + f * (w - 2 * pad) }
        func y(_ ms: Double) -> Double { h - pad - ms / top * (h - 2 * pad) }
        let points = r.latency.enumerated().map { String(format: "%.1f,%.1f", x(Double($0.offset) / Double(Swift.max(1, r.latency.count - 1))), y($0.element)) }
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(w))" height="\(Int(h))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(pad)" y="20">add → claim via NOTIFY, \(r.latency.count) samples (ms, sorted)</text>
            <line x1="\(pad)" y1="\(h - pad)" x2="\(w - pad)" y2="\(h - pad)" stroke="black"/>
            <line x1="\(pad)" y1="\(pad)" x2="\(pad)" y2="\(h - pad)" stroke="black"/>
            <line x1="\(pad)" y1="\(y(5))" x2="\(w - pad)" y2="\(y(5))" stroke="red" stroke-dasharray="4"/>
            <text x="\(w - pad - 80)" y="\(y(5) - 4)" fill="red">target 5 ms</text>
            <text x="\(x(0.5) + 4)" y="\(h - pad + 16)">p50 \(String(format: "%.2f", pct(0.5))) ms</text>
            <text x="4" y="\(y(top) + 12)">\(String(format: "%.0f", top))</text><text x="20" y="\(h - pad)">0</text>
            <polyline fill="none" stroke="steelblue" stroke-width="2" points="\(points.joined(separator: " "))"/>
            </svg>

            """
    }
}
