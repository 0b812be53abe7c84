import Index
import Journal
import StageKit
@testable import Runtime

/// The arguments each command reads from its request before it does anything (the
/// readers are the real ones; this list follows JobHandlers, RecordHandlers,
/// SubscriptionHandlers and AssetStreamer, which read them inline next to the work).
enum CommandArguments {
    static func read(_ cmd: String, _ req: ControlRequest) throws {
        switch cmd {
        case "jobs":
            if let s = try req.string("state"), JobState(rawValue: s) == nil { throw PhotomemoError(.badRequest, "unknown state") }
            _ = try req.int("limit")
            _ = try req.string("cursor")
        case "job", "retry", "cancel":
            _ = try req.requiredInt("job")
        case "enqueue":
            guard let line = req.values["job"] else { throw PhotomemoError(.badRequest, "argument \"job\" is required") }
            _ = try MemoJob(json: line)
        case "pause", "resume":
            _ = try req.string("stage")
        case "query":
            _ = try PredicateParser.parse(try req.string("predicate") ?? "TRUEPREDICATE")
            _ = try req.string("type")
            _ = try SortKey.parse(try req.string("sort") ?? "")
            _ = try req.int("limit")
            _ = try req.string("cursor")
        case "get", "delete":
            _ = try req.requiredString("record")
        case "update":
            _ = try req.requiredString("record")
            _ = try req.string("if_tag")
            _ = try RecordHandlers.memoAndFields(req)
            _ = try RecordHandlers.acl(req)
        case "changes":
            _ = try req.int("since")
            _ = try req.int("limit")
        case "asset":
            _ = try req.requiredString("record")
            _ = try req.requiredString("rendition")
        case "subscribe":
            _ = try req.int("since")
            _ = try req.string("subscription")
            _ = try req.string("type")
            _ = try req.string("fires_on")
            _ = try req.string("webhook")
            _ = try req.string("secret")
            _ = try PredicateParser.parse(try req.string("predicate") ?? "TRUEPREDICATE")
            _ = try req.string("alert")
        case "unsubscribe":
            _ = try req.requiredString("subscription")
        case "subscriptions":
            _ = try req.string("retry_failed")
        default:
            return
        }
    }
}
