import Foundation
import PhotomemoCore

/// The subcommands that talk to a running daemon through its socket.
let clientOptions: [OptionSpec] = [
    .value("home", "DIR", "the daemon's home (default: $PHOTOMEMO_HOME, else ./var)"),
    .value("socket", "PATH", "the control socket (default: HOME/photomemo.sock)"),
    .flag("json", "print the raw result as JSON"),
]

func clientCommand(_ name: String, _ synopsis: String, _ summary: String, extra: [OptionSpec] = [], positionals: ClosedRange<Int> = 0...0,
                   _ body: @escaping @Sendable (ControlClient, ParsedArguments) throws -> Int32) -> Command {
    Command(name: name, synopsis: synopsis, summary: summary, options: clientOptions + extra) { args in
        guard positionals.contains(args.positionals.count) else {
            throw UsageError(positionals.upperBound == 0 ? "\(name) takes no arguments" : "usage: photomemo \(name) \(synopsis)")
        }
        return try body(ControlClient(args), args)
    }
}

func jobID(_ s: String) throws -> JSONValue {
    guard let id = Int64(s), id > 0 else { throw UsageError("a job ID is a positive integer, got \"\(s)\"") }
    return .int(id)
}

let statusCommand = clientCommand("status", "[--follow] [--json]",
    "Shows job counts per state, per-stage outcomes and latency, backlog, dependencies and throughput.",
    extra: [.flag("follow", "refresh every second until Ctrl-C (a progress bar on a TTY, a line per second otherwise)")]) { c, args in
    let json = args.has("json")
    guard args.has("follow") else {
        let s = try c.request("status")
        if json { Output.json(s) } else { printStatus(s) }
        return 0
    }
    var lastDone: Int64?
    while true {
        let s = try c.request("status")
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
    let jobs = s["jobs"] ?? .null
    Output.line("jobs        " + ["queued", "running", "waiting", "done", "failed", "cancelled"]
        .map { "\($0) \(jobs[$0]?.intValue ?? 0)" }.joined(separator: "  "))
    Output.line("backlog     inbox \(s["backlog"]?["inbox_files"]?.intValue ?? 0) files  queue \(s["backlog"]?["queue_unread_bytes"]?.intValue ?? 0) bytes unread")
    let deps = (s["dependencies"]?.objectValue ?? [:]).sorted { $0.key < $1.key }
        .map { "\($0.key) " + ($0.value == "up" ? Output.tint("up", .green) : Output.tint("down", .red)) }
    Output.line("deps        " + deps.joined(separator: "  "))
    Output.line("throughput  \(String(format: "%.2f", s["throughput"]?["jobs_per_s"]?.doubleValue ?? 0)) jobs/s (\(s["throughput"]?["jobs_last_minute"]?.intValue ?? 0) in the last minute)")
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

let jobsCommand = clientCommand("jobs", "[--state S] [--limit N] [--cursor C] [--json]",
    "Lists jobs, newest first.",
    extra: [.value("state", "S", "queued, running, waiting, done, failed or cancelled"),
            .value("limit", "N", "jobs per page, 1 to 1000 (default 50)"),
            .value("cursor", "C", "continue after the page that returned this cursor")]) { c, args in
    var req: [String: JSONValue] = [:]
    if let s = args.value("state") { req["state"] = .string(s) }
    if let l = args.value("limit") {
        guard let n = Int64(l) else { throw UsageError("--limit needs an integer") }
        req["limit"] = .int(n)
    }
    if let cur = args.value("cursor") { req["cursor"] = .string(cur) }
    let r = try c.request("jobs", req)
    if args.has("json") { Output.json(r); return 0 }
    let jobs = r["jobs"]?.arrayValue ?? []
    Output.table(["id", "state", "stage", "att", "type", "photo", "error"], jobs.map { j in
        [String(j["id"]?.intValue ?? 0), stateText(j["state"]?.stringValue ?? "?"), j["stage"]?.stringValue ?? "-",
         String(j["attempts"]?.intValue ?? 0), j["type"]?.stringValue ?? "", j["photo"]?.stringValue ?? "-",
         String((j["error"]?.stringValue ?? (j["duplicate_of"]?.intValue.map { "duplicate of \($0)" } ?? "")).prefix(70))]
    })
    if let cursor = r["cursor"]?.stringValue { Output.line(Output.tint("more: photomemo jobs --cursor \(cursor)", .dim)) }
    return 0
}

func stateText(_ s: String) -> String {
    switch s {
    case "done": Output.tint(s, .green)
    case "failed": Output.tint(s, .red)
    case "waiting", "running": Output.tint(s, .yellow)
    default: s
    }
}

let jobCommand = clientCommand("job", "ID [--json]",
    "Shows one job: its memo, photo, results and whole history (each stage, attempt, duration, error).",
    positionals: 1...1) { c, args in
    let j = try c.request("job", ["job": try jobID(args.positionals[0])])
    if args.has("json") { Output.json(j); return 0 }
    Output.line(Output.tint("job \(j["id"]?.intValue ?? 0)", .bold) + "  " + stateText(j["state"]?.stringValue ?? "?")
        + (j["stage"]?.stringValue.map { " at \($0)" } ?? ""))
    for k in ["key", "type", "memo", "photo", "duplicate_of", "error", "quarantine"] {
        if let v = j[k], v != .null, v != "" { Output.line("  \(k.padding(toLength: 12, withPad: " ", startingAt: 0)) \(v.stringValue ?? v.jsonString)") }
    }
    if let f = j["fields"], f != .emptyObject { Output.line("  fields       \(f.jsonString)") }
    if let r = j["results"], r != .emptyObject { Output.line("  results      \(r.jsonString)") }
    Output.line()
    Output.table(["time", "event", "stage", "attempt", "duration", "message"], (j["history"]?.arrayValue ?? []).map { h in
        [h["time"]?.stringValue ?? "", h["event"]?.stringValue ?? "", h["stage"]?.stringValue ?? "",
         h["attempt"]?.intValue.map(String.init) ?? "", h["duration_ms"] == .null ? "" : Output.ms(h["duration_ms"]),
         h["message"]?.stringValue ?? ""]
    })
    return 0
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
    try c.stream("watch", tick: { if !plain { statusBar() } }) { e in
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
        if let r = e["reason"]?.stringValue { text += "  \(r)" }
        let tinted = type.hasSuffix("failed") ? Output.tint(text, .red) : type == "job_done" ? Output.tint(text, .green)
            : type.contains("retry") || type.contains("unavailable") ? Output.tint(text, .yellow) : text
        Output.write("\r\u{1B}[K" + tinted + "\n")
        statusBar()
        return true
    }
    return 0
}

let enqueueCommand = clientCommand("enqueue", "[PHOTO] [--memo T] [--type T] [--field K=V]... [--owner U] [--key K]",
    """
    Adds a memo job, validated like a queue line and durable before the reply. PHOTO is a file name in the
    inbox (the job waits for it) or an absolute path under a --allow-root. --field infers the type
    (integer, double, bool, else string; an ISO-8601 date-time stays a string the index reads as a date);
    K:string=V (or :int, :double, :bool) forces it.
    """,
    extra: [.value("memo", "TEXT", "the memo text"), .value("type", "T", "record type (default Memo)"),
            .value("field", "K=V", "a field; repeatable", repeats: true), .value("owner", "U", "owner user name"),
            .value("key", "K", "idempotency key: the same key twice is one job")],
    positionals: 0...1) { c, args in
    var job: [String: JSONValue] = [:]
    if let p = args.positionals.first { job["photo"] = .string(p) }
    if let m = args.value("memo") { job["memo"] = .string(m) }
    if let t = args.value("type") { job["type"] = .string(t) }
    if let o = args.value("owner") { job["owner"] = .string(o) }
    if let k = args.value("key") { job["key"] = .string(k) }
    var fields: [String: JSONValue] = [:]
    for f in args.all("field") {
        let (k, v) = try parseField(f)
        fields[k] = v
    }
    if !fields.isEmpty { job["fields"] = .object(fields) }
    let r = try c.request("enqueue", ["job": .object(job)])
    if args.has("json") { Output.json(r); return 0 }
    Output.line("job \(r["job"]?.intValue ?? 0) \(r["state"]?.stringValue ?? "")" + (r["error"]?.stringValue.map { ": \($0)" } ?? ""))
    return 0
}

/// `K=V` with the type inferred, or `K:TYPE=V` with it forced.
func parseField(_ s: String) throws -> (String, JSONValue) {
    guard let eq = s.firstIndex(of: "=") else { throw UsageError("--field needs K=V, got \"\(s)\"") }
    var key = String(s[..<eq])
    let value = String(s[s.index(after: eq)...])
    var forced: String?
    if let colon = key.firstIndex(of: ":") {
        forced = String(key[key.index(after: colon)...])
        key = String(key[..<colon])
    }
    switch forced {
    case "string": return (key, .string(value))
    case "int", "integer":
        guard let i = Int64(value) else { throw UsageError("--field \(key):int needs an integer, got \"\(value)\"") }
        return (key, .int(i))
    case "double":
        guard let d = Double(value) else { throw UsageError("--field \(key):double needs a number, got \"\(value)\"") }
        return (key, .double(d))
    case "bool":
        guard value == "true" || value == "false" else { throw UsageError("--field \(key):bool needs true or false") }
        return (key, .bool(value == "true"))
    case nil:
        if let i = Int64(value) { return (key, .int(i)) }
        if let d = Double(value), value.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) { return (key, .double(d)) }
        if value == "true" || value == "false" { return (key, .bool(value == "true")) }
        return (key, .string(value))
    case .some(let t):
        throw UsageError("unknown field type \"\(t)\"; types: string, int, double, bool")
    }
}

func simpleCommand(_ name: String, _ synopsis: String, _ summary: String, positionals: ClosedRange<Int>,
                   _ request: @escaping @Sendable ([String]) throws -> [String: JSONValue],
                   _ describe: @escaping @Sendable (JSONValue) -> String) -> Command {
    clientCommand(name, synopsis, summary, positionals: positionals) { c, args in
        let r = try c.request(name, try request(args.positionals))
        if args.has("json") { Output.json(r) } else { Output.line(describe(r)) }
        return 0
    }
}

let retryCommand = simpleCommand("retry", "ID", "Runs a failed or cancelled job again from the stage where it stopped, with fresh attempts.",
                                 positionals: 1...1, { ["job": try jobID($0[0])] }) { "job \($0["job"]?.intValue ?? 0) \($0["state"]?.stringValue ?? "")" }
let cancelCommand = simpleCommand("cancel", "ID", "Ends a queued, waiting or running job (a running stage finishes; its outcome is dropped).",
                                  positionals: 1...1, { ["job": try jobID($0[0])] }) { "job \($0["job"]?.intValue ?? 0) cancelled" }
func pauseText(_ r: JSONValue) -> String {
    let stages = (r["paused_stages"]?.arrayValue ?? []).compactMap(\.stringValue)
    return (r["paused"] == .bool(true) ? "paused" : "running") + (stages.isEmpty ? "" : "; paused stages: " + stages.joined(separator: ", "))
}
let pauseCommand = simpleCommand("pause", "[STAGE]", "Stops new stage runs (all, or one stage); running ones finish. Survives restarts.",
                                 positionals: 0...1, { $0.first.map { ["stage": .string($0)] } ?? [:] }, pauseText)
let resumeCommand = simpleCommand("resume", "[STAGE]", "Undoes pause (all, or one stage).",
                                  positionals: 0...1, { $0.first.map { ["stage": .string($0)] } ?? [:] }, pauseText)
let reloadCommand = simpleCommand("reload", "", "Re-reads the job definition (like SIGHUP); a bad file is reported and the old one stays.",
                                  positionals: 0...0, { _ in [:] }) { r in
    "reloaded \(r["name"]?.stringValue ?? "?") from \(r["source"]?.stringValue ?? "?"): " + (r["stages"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: " → ")
}

let metricsCommand = clientCommand("metrics", "",
    "Prints the daemon's metrics in the Prometheus text exposition format.") { c, args in
    let r = try c.request("metrics")
    if args.has("json") { Output.json(r) } else { Output.write(r["text"]?.stringValue ?? "") }
    return 0
}
