import ControlProtocol
import Foundation
import StageKit

/// jobs, job and enqueue.
let jobsCommand = clientCommand("jobs", "[--state S] [--limit N] [--cursor C] [--json]",
    "Lists jobs, newest first.",
    extra: [.value("state", "S", "queued, running, waiting, done, failed or cancelled"),
            .value("limit", "N", "jobs per page, 1 to 1000 (default 50)"),
            .value("cursor", "C", "continue after the page that returned this cursor")]) { c, args in
    var req: [String: JSONValue] = [:]
    if let s = args.value("state") { req["state"] = .string(s) }
    if let n = try args.int("limit") { req["limit"] = .int(n) }
    if let cur = args.value("cursor") { req["cursor"] = .string(cur) }
    let r = try c.request(.jobs, req)
    if args.has("json") { Output.json(r); return 0 }
    let jobs = r["jobs"]?.arrayValue ?? []
    Output.table(["id", "state", "stage", "att", "type", "photo", "error"], jobs.map { j in
        [String(j["id"]?.intValue ?? 0), stateText(j["state"]?.stringValue ?? "?"), j["stage"]?.stringValue ?? "-",
         String(j["attempts"]?.intValue ?? 0), Output.text(j["type"]?.stringValue ?? ""), Output.text(j["photo"]?.stringValue ?? "-"),
         Output.text(String((j["error"]?.stringValue ?? (j["duplicate_of"]?.intValue.map { "duplicate of \($0)" } ?? "")).prefix(70)))]
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
    let j = try c.request(.job, ["job": try jobID(args.positionals[0])])
    if args.has("json") { Output.json(j); return 0 }
    Output.line(Output.tint("job \(j["id"]?.intValue ?? 0)", .bold) + "  " + stateText(j["state"]?.stringValue ?? "?")
        + (j["stage"]?.stringValue.map { " at \($0)" } ?? ""))
    for k in ["key", "type", "memo", "photo", "duplicate_of", "error", "quarantine"] {
        guard let v = j[k], v != .null, v != "" else { continue }
        // The error's code first, as a stage's outcome set it: `error  [no_space] ...`.
        let code = k == "error" ? j["code"]?.stringValue.map { "[\($0)] " } ?? "" : ""
        Output.line("  \(k.padding(toLength: 12, withPad: " ", startingAt: 0)) \(Output.text(code + (v.stringValue ?? v.jsonString)))")
    }
    if let f = j["fields"], f != .emptyObject { Output.line("  fields       \(Output.text(f.jsonString))") }
    if let r = j["results"], r != .emptyObject { Output.line("  results      \(Output.text(r.jsonString))") }
    Output.line()
    Output.table(["time", "event", "stage", "attempt", "duration", "message"], (j["history"]?.arrayValue ?? []).map { h in
        [h["time"]?.stringValue ?? "", h["event"]?.stringValue ?? "", h["stage"]?.stringValue ?? "",
         h["attempt"]?.intValue.map(String.init) ?? "", h["duration_ms"] == .null ? "" : Output.ms(h["duration_ms"]),
         Output.text(h["message"]?.stringValue ?? "")]
    })
    return 0
}

let enqueueCommand = clientCommand("enqueue", "[PHOTO] [--memo T] [--type T] [--field K=V]... [--owner U] [--key K] [--acl JSON]",
    """
    Adds a memo job, validated like a queue line and durable before the reply. PHOTO is a file name in the
    inbox (the job waits for it) or an absolute path under a --allow-root. --field infers the type
    (integer, double, bool, else string; an ISO-8601 date-time stays a string the index reads as a date);
    K:string=V (or :int, :double, :bool) forces it.
    """,
    extra: [.value("memo", "TEXT", "the memo text"), .value("type", "T", "record type (default Memo)"),
            .value("field", "K=V", "a field; repeatable", repeats: true), .value("owner", "U", "owner user name"),
            .value("key", "K", "idempotency key: the same key twice is one job"),
            .value("acl", "JSON", #"share the record: {"read": ["bob"], "write": ["carol"], "public": true}"#)],
    positionals: 0...1) { c, args in
    var job: [String: JSONValue] = [:]
    if let p = args.positionals.first { job["photo"] = .string(p) }
    if let m = args.value("memo") { job["memo"] = .string(m) }
    if let t = args.value("type") { job["type"] = .string(t) }
    if let o = args.value("owner") { job["owner"] = .string(o) }
    if let k = args.value("key") { job["key"] = .string(k) }
    if let acl = try aclOption(args) { job["acl"] = acl }
    var fields: [String: JSONValue] = [:]
    for f in args.all("field") {
        let (k, v) = try parseField(f)
        fields[k] = v
    }
    if !fields.isEmpty { job["fields"] = .object(fields) }
    let r = try c.request(.enqueue, ["job": .object(job)])
    if args.has("json") { Output.json(r); return 0 }
    Output.line("job \(r["job"]?.intValue ?? 0) \(r["state"]?.stringValue ?? "")" + (r["error"]?.stringValue.map { ": \(Output.text($0))" } ?? ""))
    return 0
}

/// `--acl JSON`, an object (the daemon checks its lists as it checks a job line's `acl`).
func aclOption(_ args: ParsedArguments) throws -> JSONValue? {
    guard let a = args.value("acl") else { return nil }
    guard let v = try? JSONValue.parse(a), case .object = v else { throw UsageError("--acl needs a JSON object, got \(a)") }
    return v
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
