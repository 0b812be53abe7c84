import StageKit

/// The control socket's contract, shared by the daemon and the CLI (DESIGN.md, "Control
/// socket"): command names, argument keys and the reply envelope, written once so that
/// neither side retypes them.
///
///     request  {"id": 1, "cmd": "status", ...arguments}
///     reply    {"id": 1, "ok": true, "result": {...}}  |  {"id": 1, "ok": false, "error": {"code", "message"}}
///     event    {"event": TYPE, ...}  (streams: watch, subscribe, asset)
public enum ControlCommand: String, CaseIterable, Sendable {
    case status, jobs, job, watch, enqueue, retry, cancel, pause, resume, reload, metrics, hosts, inbox
    case query, get, update, delete, asset, changes
    case subscribe, unsubscribe, subscriptions
}

/// Request argument names: named after what they hold, never `id` (the request's own).
public enum ControlArgument {
    public static let id = "id", cmd = "cmd"
    public static let job = "job", owner = "owner", state = "state", limit = "limit", cursor = "cursor", stage = "stage"
    public static let record = "record", predicate = "predicate", type = "type", sort = "sort", memo = "memo", fields = "fields"
    public static let ifTag = "if_tag", acl = "acl", rendition = "rendition", since = "since"
    public static let subscription = "subscription", firesOn = "fires_on", alert = "alert", webhook = "webhook", secret = "secret"
    public static let exec = "exec", follow = "follow", retryFailed = "retry_failed"
}

public enum ControlReply {
    public static func ok(id: JSONValue, _ result: JSONValue) -> JSONValue {
        ["id": id, "ok": true, "result": result]
    }

    public static func error(id: JSONValue, _ e: PhotomemoError) -> JSONValue {
        ["id": id, "ok": false, "error": ["code": .string(e.code.rawValue), "message": .string(e.message)]]
    }

    /// A reply line's result, or the daemon's error with its code.
    public static func result(of line: JSONValue) -> Result<JSONValue, PhotomemoError> {
        if line["ok"] == .bool(true) { return .success(line["result"] ?? .null) }
        let code = line["error"]?["code"]?.stringValue ?? "internal"
        return .failure(PhotomemoError(PhotomemoError.Code(rawValue: code), line["error"]?["message"]?.stringValue ?? "request failed"))
    }
}
