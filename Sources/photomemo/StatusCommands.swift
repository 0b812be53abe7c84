import ControlProtocol
import Foundation
import StageKit

/// status, watch and metrics: what the daemon is doing.
let statusCommand = clientCommand("status", "[--follow] [--json]",
    "Shows job counts per state, per-stage outcomes and latency, backlog, dependencies and throughput.",
    extra: [.flag("follow", "refresh every second until Ctrl-C (a progress bar on a TTY, a line per second otherwise)")]) { c, args in
    let json = args.has("json")
    guard args.has("follow") else {
        let s = try c.request(.status)
        if json { Output.json(s) } else { printStatus(s) }
        return 0
    }
    var lastDone: Int64?
    while true {
        let s = try c.request(.status)
        let done = s["jobs"]?["done"]?.intValue ?? 0
        if json || !Output.isTTY {
            Output.json(json ? s : ["time": .string(isoTimestamp(unixNow())), "jobs": s["jobs"] ?? .null, "backlog": s["backlog"] ?? .null])
        } else {
            Output.write("\u{1B}[H\u{1B}[2J")
            printStatus(s)
            let jobs = s["jobs"]?.objectValue ?? [:]
            let total = jobs.values.compactMap(\.intValue).reduce(0, +) - (jobs["cancelled"]?.intValue ?? 0)
            let finished = done + (jobs["failed"]?.intValue ?? 0)
            let rate = lastDone.map { Double(done - $0) } ?? 0
            Output.line()
            Output.line("\(Output.bar(total > 0 ? Double(finished) / Double(total) : 1)) \(finished)/\(total) finished · \(String(format: "%.1f", rate)) jobs/s")
        }
        lastDone = done
        Thread.sleep(forTimeInterval: 1)
    }
}

func printStatus(_ s: JSONValue) {
    let paused = s["paused"] == .bool(true)
    Output.line(Output.tint("photomemo \(s["version"]?.stringValue ?? "?")", .bold)
        + " · up \(Output.duration(s["uptime_s"]?.doubleValue ?? 0)) · job \(s["job_definition"]?.stringValue ?? "?") · "
        + (paused ? Output.tint("paused", .yellow) : Output.tint("running", .green)))
    // On a shared database, which daemon answered: each shows its own host's live state.
    if let host = s["host"]?.stringValue, !host.isEmpty { Output.line("host        \(host) on \(s["database"]?.stringValue ?? "?")") }
    if let unread = s["journal_error"]?.stringValue {
        // Counts come from the journal: none is known, which is not zero.
        Output.line("jobs        " + Output.tint("unknown: the journal cannot be read (" + Output.text(unread) + ")", .red))
    } else {
        let jobs = s["jobs"] ?? .null
        Output.line("jobs        " + ["queued", "running", "waiting", "done", "failed", "cancelled"]
            .map { "\($0) \(jobs[$0]?.intValue ?? 0)" }.joined(separator: "  "))
    }
    Output.line("backlog     inbox \(s["backlog"]?["inbox_files"]?.intValue ?? 0) files  queue \(s["backlog"]?["queue_unread_bytes"]?.intValue ?? 0) bytes unread")
    let deps = (s["dependencies"]?.objectValue ?? [:]).sorted { $0.key < $1.key }
        .map { "\($0.key) " + ($0.value == "up" ? Output.tint("up", .green) : Output.tint("down", .red)) }
    Output.line("deps        " + deps.joined(separator: "  "))
    for (dep, why) in (s["dependency_reasons"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
        Output.line("            " + Output.tint("\(dep): " + Output.text(why.stringValue ?? "?"), .red))
    }
    if let failing = s["journal_write_error"]?.objectValue {
        Output.line("journal     " + Output.tint("failing since \(failing["since"]?.stringValue ?? "?"): "
            + Output.text(failing["error"]?.stringValue ?? "?"), .red))
    }
    Output.line("throughput  \(String(format: "%.2f", s["throughput"]?["jobs_per_s"]?.doubleValue ?? 0)) jobs/s (\(s["throughput"]?["jobs_last_minute"]?.intValue ?? 0) in the last minute)")
    let reprocess = s["reprocess"] ?? .null
    if ["queued", "running", "waiting"].contains(where: { (reprocess[$0]?.intValue ?? 0) > 0 }) {
        Output.line("reprocess   " + ["queued", "running", "waiting", "done", "failed"].map { "\($0) \(reprocess[$0]?.intValue ?? 0)" }.joined(separator: "  ")
            + "  (\(s["throughput"]?["reprocess_last_minute"]?.intValue ?? 0) in the last minute)")
    }
    if let trashed = s["trash"]?["records"]?.intValue, trashed > 0 { Output.line("trash       \(trashed) records (photomemo trash)") }
    Output.line()
    let stages = s["stages"]?.objectValue ?? [:]
    // Pipeline order when the daemon says it, else by name.
    let order = s["stage_order"]?.arrayValue?.compactMap(\.stringValue) ?? stages.keys.sorted()
    Output.table(["stage", "done", "failed", "retried", "skipped", "running", "p50", "p99"], order.filter { stages[$0] != nil }.map { name in
        let st = stages[name]!
        let label = st["paused"] == .bool(true) ? name + " (paused)" : name
        return [label] + ["done", "failed", "retried", "skipped", "running"].map { String(st[$0]?.intValue ?? 0) }
            + [Output.ms(st["p50_ms"]), Output.ms(st["p99_ms"])]
    })
}

let watchCommand = clientCommand("watch", "[--json]",
    "Prints every job and stage transition as it happens, until Ctrl-C (JSON lines when not on a TTY or with --json).") { c, args in
    let plain = args.has("json") || !Output.isTTY
    var counts: [String: Int] = [:]
    var recent: [Double] = []
    func statusBar() {
        let now = unixNow()
        recent.removeAll { now - $0 > 10 }
        let rate = Double(recent.count) / 10
        Output.write("\r\u{1B}[K" + Output.tint("done \(counts["job_done", default: 0]) · failed \(counts["job_failed", default: 0]) · "
            + "accepted \(counts["job_accepted", default: 0]) · \(String(format: "%.1f", rate)) jobs/s", .dim))
    }
    try c.stream(.watch, tick: { if !plain { statusBar() } }) { e in
        if plain { Output.json(e); return true }
        let type = e["event"]?.stringValue ?? "?"
        counts[type, default: 0] += 1
        if type == "job_done" { recent.append(unixNow()) }
        let time = String((e["time"]?.stringValue ?? "").dropFirst(11).prefix(12))
        var text = "\(time)  job \(e["job"]?.intValue.map(String.init) ?? "-")  \(type)"
        if let s = e["stage"]?.stringValue { text += "  \(s)" }
        if let a = e["attempt"]?.intValue { text += "  attempt \(a)" }
        if let ms = e["ms"] { text += "  \(Output.ms(ms))" }
        if let d = e["delay_ms"]?.intValue { text += "  next in \(d) ms" }
        if let r = e["reason"]?.stringValue { text += "  \(Output.text(r))" }
        let tinted = type.hasSuffix("failed") ? Output.tint(text, .red) : type == "job_done" ? Output.tint(text, .green)
            : type.contains("retry") || type.contains("unavailable") ? Output.tint(text, .yellow) : text
        Output.write("\r\u{1B}[K" + tinted + "\n")
        statusBar()
        return true
    }
    return 0
}

let metricsCommand = clientCommand("metrics", "",
    "Prints the daemon's metrics in the Prometheus text exposition format.") { c, args in
    let r = try c.request(.metrics)
    if args.has("json") { Output.json(r) } else { Output.write(r["text"]?.stringValue ?? "") }
    return 0
}

let inboxCommand = clientCommand("inbox", "[--json]",
    "Lists the inbox entries left alone, with why: files that are not photos (a video, a sidecar, Thumbs.db) and folders not looked into (a tool's, or deeper than inbox.depth); then files under names the inbox ignores (a transfer tool's temporary name) untouched for the definition's inbox.stale_temp (default 24h). A user sees their own files; admins see every file, with its owner.") { c, args in
    let r = try c.request(.inbox)
    if args.has("json") { Output.json(r); return 0 }
    let entries = r["skipped"]?.arrayValue ?? [], stale = r["stale"]?.arrayValue ?? []
    /// The reply lists the first 1,000 of each; the rest is counted.
    func more(_ key: String, _ listed: Int) {
        if let total = r[key]?.intValue, total > listed { Output.write("… and \(total - Int64(listed)) more\n") }
    }
    if entries.isEmpty { Output.write("nothing in the inbox is left alone\n") }
    else {
        Output.table(["name", "owner", "left alone because"], entries.map {
            [Output.text($0["name"]?.stringValue ?? "?"), $0["owner"]?.stringValue ?? "?", Output.text($0["reason"]?.stringValue ?? "")]
        })
        more("total", entries.count)
    }
    guard !stale.isEmpty else { return 0 }
    Output.write("\nfiles under names the inbox ignores, untouched for inbox.stale_temp (a transfer that died?):\n")
    Output.table(["name", "owner", "bytes", "untouched"], stale.map {
        [Output.text($0["name"]?.stringValue ?? "?"), $0["owner"]?.stringValue ?? "?", String($0["bytes"]?.intValue ?? 0),
         Output.duration(Double($0["idle_s"]?.intValue ?? 0))]
    })
    more("stale_total", stale.count)
    return 0
}

let hostsCommand = clientCommand("hosts", "[--json]",
    "Lists the daemons sharing this one's database (PostgreSQL): the jobs each holds a lease on, and its stage runs in the last minute.") { c, args in
    let r = try c.request(.hosts)
    if args.has("json") { Output.json(r); return 0 }
    let rows = (r["hosts"]?.arrayValue ?? []).map { h in
        [h["host"]?.stringValue ?? "?", h["pid"]?.intValue.map(String.init) ?? "-",
         h["seen_s_ago"]?.doubleValue.map { Output.duration($0) + " ago" } ?? "-",
         String(h["leases"]?.intValue ?? 0), String(h["stage_runs_last_minute"]?.intValue ?? 0)]
    }
    Output.table(["host", "pid", "seen", "running", "stage runs/min"], rows)
    return 0
}
