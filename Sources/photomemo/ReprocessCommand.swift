import ControlProtocol
import Foundation
import StageKit

/// `photomemo reprocess`: runs matching records again through the current definition.
let reprocessCommand = clientCommand("reprocess", "PREDICATE [--from STAGE] [--type T] [--json]",
    """
    Runs each matching record's photo again from its stored original through the current job definition's
    stages from STAGE (default: the first that decodes the photo, compress), updating the same record: new renditions, an update change, the
    old assets released. Only records you may write (an admin: every record). The jobs run after fresh
    photos; `status` counts them under "reprocess". Running it again while they are queued adds none.
    A user stops at their unfinished-jobs cap (stopped: ..., exit 1).
    --json prints {"enqueued", "matched", "from", "without_original", "stopped"}.
    """,
    extra: [.value("from", "STAGE", "the first stage to run again (default: the first that decodes the photo; it must come before the one storing assets)"),
            .value("type", "T", "only records of this type")],
    positionals: 1...1) { c, args in
    var req: [String: JSONValue] = [ControlArgument.predicate: .string(args.positionals[0])]
    if let from = args.value("from") { req[ControlArgument.from] = .string(from) }
    if let t = args.value("type") { req[ControlArgument.type] = .string(t) }
    let r = try c.request(.reprocess, req)
    let stopped = r["stopped"]?.stringValue
    if args.has("json") { Output.json(r); return stopped == nil ? 0 : 1 }
    let enqueued = r["enqueued"]?.intValue ?? 0, matched = r["matched"]?.intValue ?? 0
    Output.line("enqueued \(enqueued) reprocess job\(enqueued == 1 ? "" : "s") from \(r["from"]?.stringValue ?? "?") "
                + "(\(matched) matching record\(matched == 1 ? "" : "s") you may write; \(matched - enqueued) already queued or without an original)")
    for id in (r["without_original"]?.arrayValue ?? []).compactMap(\.stringValue) {
        Output.line(Output.tint("  \(id): no stored original to run again from", .dim))
    }
    if let stopped { StandardStream.err("stopped: \(stopped)\n") }
    return stopped == nil ? 0 : 1
}
