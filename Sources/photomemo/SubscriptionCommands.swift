import ControlProtocol
import Foundation
import StageKit

/// CLI for subscriptions: subscribe, unsubscribe, subscriptions.
let subscribeCommand = clientCommand("subscribe",
    "--type T [--predicate P] --fires-on create,update,delete [--alert TEXT] [--webhook URL --secret S | --exec CMD | --follow]",
    """
    Subscribes to record changes of a type that match a predicate. Sinks: a webhook (POST of the event JSON,
    signed with X-Photomemo-Signature: sha256=HMAC), a command (the event JSON on stdin), or this terminal
    (--follow: events printed as they come; --subscription ID --since N picks up an earlier socket subscription).
    """,
    extra: [.value("type", "T", "the record type"), .value("predicate", "P", "which records (default TRUEPREDICATE)"),
            .value("fires-on", "OPS", "create,update,delete (default all three)"),
            .value("alert", "TEXT", "a template, e.g. \"A new {type} was added: {memo}\""),
            .value("webhook", "URL", "POST events here"), .value("secret", "S", "the webhook's HMAC key"),
            .value("exec", "CMD", "run CMD (via /bin/sh -c) with each event on stdin"),
            .flag("follow", "print events here until Ctrl-C"),
            .value("subscription", "ID", "with --follow: an existing socket subscription"),
            .value("since", "N", "with --follow: start after change N")]) { c, args in
    var req: [String: JSONValue] = [:]
    if let id = args.value("subscription") {
        req["subscription"] = .string(id)
    } else {
        guard let t = args.value("type") else { throw UsageError("subscribe needs --type T") }
        req["type"] = .string(t)
        if let p = args.value("predicate") { req["predicate"] = .string(p) }
        req["fires_on"] = .string(args.value("fires-on") ?? "create,update,delete")
        if let a = args.value("alert") { req["alert"] = .string(a) }
        if let w = args.value("webhook") {
            req["webhook"] = .string(w)
            guard let s = args.value("secret") else { throw UsageError("--webhook needs --secret S") }
            req["secret"] = .string(s)
        }
        if let e = args.value("exec") { req["exec"] = ["/bin/sh", "-c", .string(e)] }
    }
    if let n = try args.int("since") { req["since"] = .int(n) }
    let following = args.has("follow") || (req["webhook"] == nil && req["exec"] == nil)
    req["follow"] = .bool(following)
    guard following else {
        let r = try c.request(.subscribe, req)
        if args.has("json") { Output.json(r) } else { Output.line("subscription \(r["id"]?.stringValue ?? "") (\(r["sink"]?.stringValue ?? ""))") }
        return 0
    }
    let plain = args.has("json") || !Output.isTTY
    try c.stream(.subscribe, req) { e in
        if plain { Output.json(e); return true }
        let record = e["record"] ?? .null
        Output.line("\(e["seq"]?.intValue ?? 0)  \(e["op"]?.stringValue ?? "")  \(e["type"]?.stringValue ?? "")  \(record["id"]?.stringValue ?? "")"
            + (e["alert"]?.stringValue.map { "  " + Output.tint(Output.text($0), .bold) } ?? ""))
        return true
    }
    return 0
}

let unsubscribeCommand = clientCommand("unsubscribe", "ID [--json]", "Removes one of your subscriptions.", positionals: 1...1) { c, args in
    let r = try c.request(.unsubscribe, [ControlArgument.subscription: .string(args.positionals[0])])
    if args.has("json") { Output.json(r) } else { Output.line("unsubscribed \(args.positionals[0])") }
    return 0
}

let subscriptionsCommand = clientCommand("subscriptions", "[--retry-failed ID] [--json]",
    "Lists your subscriptions with delivery counts (pending, delivered, failed) and the last error.",
    extra: [.value("retry-failed", "ID", "put a subscription's failed deliveries back in line first")]) { c, args in
    var req: [String: JSONValue] = [:]
    if let id = args.value("retry-failed") { req["retry_failed"] = .string(id) }
    let r = try c.request(.subscriptions, req)
    if args.has("json") { Output.json(r); return 0 }
    if let n = r["retried"]?.intValue { Output.line("\(n) failed deliveries queued again") }
    // A parked subscription's error (why fan-out skips it) matters more than a delivery's.
    Output.table(["id", "type", "fires on", "sink", "state", "pending", "delivered", "failed", "last error"], (r["subscriptions"]?.arrayValue ?? []).map { s in
        [s["id"]?.stringValue ?? "", Output.text(s["type"]?.stringValue ?? ""), (s["fires_on"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ","),
         s["sink"]?.stringValue ?? "", s["state"]?.stringValue ?? "", String(s["pending"]?.intValue ?? 0), String(s["delivered"]?.intValue ?? 0),
         String(s["failed"]?.intValue ?? 0), Output.text(String((s["error"]?.stringValue ?? s["last_error"]?.stringValue ?? "").prefix(60)))]
    })
    return 0
}
