import Foundation
import Journal
import PhotomemoCore
import StageKit
import Stores

/// The Prometheus text exposition format (version 0.0.4) of the daemon's counters:
/// stage outcomes, stage latency histograms, job gauges by state, backlog, build info.
enum Metrics {
    static let boundsMs: [Double] = [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000]

    static func render(journal: any JobControl, snapshot: StatusHandlers.LoopSnapshot) throws -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        func sample(_ name: String, _ labels: [(String, String)], _ value: Double) {
            let l = labels.isEmpty ? "" : "{" + labels.map { "\($0.0)=\"\(escape($0.1))\"" }.joined(separator: ",") + "}"
            out += "\(name)\(l) \(format(value))\n"
        }

        family("photomemo_build_info", "gauge", "Build information; always 1.")
        sample("photomemo_build_info", [("version", PhotomemoVersion.current)], 1)
        family("photomemo_uptime_seconds", "gauge", "Seconds since the daemon started.")
        sample("photomemo_uptime_seconds", [], unixNow() - snapshot.started)
        family("photomemo_paused", "gauge", "1 when the whole pipeline is paused.")
        sample("photomemo_paused", [], snapshot.paused ? 1 : 0)

        let commits = journal.committed
        family("photomemo_journal_transactions_total", "counter", "Journal write transactions committed, by whether the commit waited for the disk.")
        sample("photomemo_journal_transactions_total", [("durable", "true")], Double(commits.durable))
        sample("photomemo_journal_transactions_total", [("durable", "false")], Double(commits.transactions - commits.durable))
        family("photomemo_jobs", "gauge", "Jobs in the journal by state.")
        for (state, n) in try journal.counts().sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            sample("photomemo_jobs", [("state", state.rawValue)], Double(n))
        }
        family("photomemo_jobs_pruned_total", "counter", "Finished jobs removed by retention, by state.")
        let pruned = try journal.prunedCounts()
        for state in [JobState.cancelled, .done, .failed] {
            sample("photomemo_jobs_pruned_total", [("state", state.rawValue)], Double(pruned[state] ?? 0))
        }
        family("photomemo_reprocess_jobs", "gauge", "Reprocess jobs (photomemo reprocess) by state, also counted in photomemo_jobs.")
        for (state, n) in try journal.reprocessCounts().sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            sample("photomemo_reprocess_jobs", [("state", state.rawValue)], Double(n))
        }
        family("photomemo_backlog_inbox_files", "gauge", "Inbox files seen but not yet jobs.")
        sample("photomemo_backlog_inbox_files", [], Double(snapshot.backlog.inboxFiles))
        family("photomemo_inbox_skipped", "gauge", "Inbox entries left alone: folders and files that are not photos.")
        sample("photomemo_inbox_skipped", [], Double(snapshot.inboxSkipped))
        family("photomemo_inbox_stale_bytes", "gauge", "Bytes of inbox files under ignored names untouched for inbox.stale_temp.")
        sample("photomemo_inbox_stale_bytes", [], Double(snapshot.inboxStale.bytes))
        family("photomemo_backlog_queue_unread_bytes", "gauge", "Bytes of queue files not yet read (not a refused file's).")
        sample("photomemo_backlog_queue_unread_bytes", [], Double(snapshot.backlog.queueUnreadBytes))

        if let v = snapshot.lastVerify {
            family("photomemo_verify_last_run_timestamp_seconds", "gauge", "When the last photomemo verify finished (Unix time).")
            sample("photomemo_verify_last_run_timestamp_seconds", [], v.finishedAt)
            family("photomemo_verify_assets", "gauge", "The last verify's assets by result: checked, ok, damaged, missing; and orphaned store objects, repairs.")
            for (result, n) in [("checked", v.checked), ("ok", v.ok), ("damaged", v.damaged), ("missing", v.missing),
                                ("orphans", v.orphans), ("repaired", v.repaired)] {
                sample("photomemo_verify_assets", [("result", result)], Double(n))
            }
        }

        let stats = try journal.stageStats(window: 0)
        family("photomemo_stage_runs_total", "counter", "Stage runs by stage and outcome.")
        for name in snapshot.stageNames {
            let s = stats[name] ?? StageStats()
            for (outcome, n) in [("done", s.done), ("skipped", s.skipped), ("retry", s.retried), ("unavailable", s.unavailable), ("failed", s.failed)] {
                sample("photomemo_stage_runs_total", [("stage", name), ("outcome", outcome)], Double(n))
            }
        }
        family("photomemo_stage_running", "gauge", "Stage runs in progress.")
        for name in snapshot.stageNames { sample("photomemo_stage_running", [("stage", name)], Double(snapshot.running[name] ?? 0)) }

        let hist = try journal.stageHistograms(boundsMs: boundsMs)
        family("photomemo_stage_duration_seconds", "histogram", "Duration of successful stage runs.")
        for name in snapshot.stageNames {
            let h = hist[name] ?? (Array(repeating: 0, count: boundsMs.count), 0, 0)
            for (i, b) in boundsMs.enumerated() {
                sample("photomemo_stage_duration_seconds_bucket", [("stage", name), ("le", format(b / 1000))], Double(h.buckets[i]))
            }
            sample("photomemo_stage_duration_seconds_bucket", [("stage", name), ("le", "+Inf")], Double(h.count))
            sample("photomemo_stage_duration_seconds_sum", [("stage", name)], h.sumMs / 1000)
            sample("photomemo_stage_duration_seconds_count", [("stage", name)], Double(h.count))
        }
        let cpu = StageCPU.snapshot
        family("photomemo_stage_cpu_seconds_total", "counter", "CPU time spent inside stage runs.")
        for name in snapshot.stageNames { sample("photomemo_stage_cpu_seconds_total", [("stage", name)], cpu[name] ?? 0) }
        family("photomemo_sha256_bytes_total", "counter", "Bytes this daemon hashed with SHA-256 (photos, renditions, keys).")
        sample("photomemo_sha256_bytes_total", [], Double(SHA256.processBytes))
        family("photomemo_dependency_up", "gauge", "1 when a dependency answers, 0 when a stage found it down.")
        for (d, up) in snapshot.dependencies.sorted(by: { $0.key < $1.key }) {
            sample("photomemo_dependency_up", [("dependency", d)], up ? 1 : 0)
        }
        family("photomemo_store_requests_total", "counter", "Requests this daemon sent to S3 stores, by method.")
        for (method, n) in S3Store.processRequests.byMethod.sorted(by: { $0.key < $1.key }) {
            sample("photomemo_store_requests_total", [("method", method)], Double(n))
        }
        family("photomemo_control_clients", "gauge", "Connected control-socket clients.")
        sample("photomemo_control_clients", [], Double(snapshot.clients))
        return out
    }

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
    }

    static func format(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v)
    }
}
