import ControlProtocol
import Foundation
import StageKit

/// CLI for records: query, get, update, delete, asset, changes, and the trash's trash and restore-record.
let queryCommand = clientCommand("query", "PREDICATE [--type T] [--sort KEYS] [--limit N] [--cursor C] [--json]",
    """
    Lists the records matching a predicate, e.g. 'salesPrice >= 1000 AND memo CONTAINS "receipt"',
    sorted by KEYS ('-salesPrice,created'; - is descending). --json prints {"records": [...], "cursor": ...}.
    """,
    extra: [.value("type", "T", "only records of this type"), .value("sort", "KEYS", "sort descriptors, e.g. -salesPrice,costRate"),
            .value("limit", "N", "records per page, 1 to 1000 (default 100)"), .value("cursor", "C", "the next page of an earlier query")],
    positionals: 1...1) { c, args in
    var req: [String: JSONValue] = ["predicate": .string(args.positionals[0])]
    if let t = args.value("type") { req["type"] = .string(t) }
    if let s = args.value("sort") { req["sort"] = .string(s) }
    if let n = try args.int("limit") { req["limit"] = .int(n) }
    if let cur = args.value("cursor") { req["cursor"] = .string(cur) }
    let r = try c.request(.query, req)
    if args.has("json") { Output.json(r); return 0 }
    let records = r["records"]?.arrayValue ?? []
    let fieldNames = Array(Set(records.flatMap { ($0["fields"]?.objectValue ?? [:]).keys })).sorted().prefix(6)
    Output.table(["id", "type", "memo"] + fieldNames + ["owner"], records.map { rec in
        [rec["id"]?.stringValue ?? "", Output.text(rec["type"]?.stringValue ?? ""), Output.text(String((rec["memo"]?.stringValue ?? "").prefix(40)))]
            + fieldNames.map { f in Output.text(rec["fields"]?[f]) ?? "" }
            + [Output.text(rec["owner"]?.stringValue ?? "")]
    })
    if let cursor = r["cursor"]?.stringValue { Output.line(Output.tint("more: --cursor \(cursor)", .dim)) }
    return 0
}

let getCommand = clientCommand("get", "ID [--trashed] [--json]",
    "Shows one record: its fields, memo, owner, source and sha256, ACL, assets, EXIF and change tag. --trashed: a record in the trash.",
    extra: [.flag("trashed", "show the record from the trash (with when it was deleted and will be purged)")],
    positionals: 1...1) { c, args in
    var req: [String: JSONValue] = [ControlArgument.record: .string(args.positionals[0])]
    if args.has("trashed") { req[ControlArgument.trashed] = true }
    let r = try c.request(.get, req)
    if args.has("json") { Output.json(r); return 0 }
    Output.line(Output.tint("\(r["type"]?.stringValue ?? "") \(r["id"]?.stringValue ?? "")", .bold))
    // A trashed record also says when it was deleted and when it will be purged.
    for k in ["memo", "owner", "source", "sha256", "created", "modified", "change_tag", "deleted", "purge_after"]
    where r[k] != nil || !["deleted", "purge_after"].contains(k) {
        Output.line("  \(k.padding(toLength: 11, withPad: " ", startingAt: 0)) \(Output.text(r[k]?.stringValue ?? "-"))")
    }
    let dangling = Set((r["dangling"]?.arrayValue ?? []).compactMap(\.stringValue))
    for (k, v) in (r["fields"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
        let note = dangling.contains(k) ? " (dangling: not a record you may read)" : ""
        Output.line("  \(k.padding(toLength: 11, withPad: " ", startingAt: 0)) \(Output.text(v.stringValue ?? v.jsonString))\(note)")
    }
    Output.line("  acl         \(Output.text(r["acl"]?.jsonString ?? "{}"))")
    for (k, v) in (r["assets"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
        Output.line("  asset \(k): \(v["width"]?.intValue ?? 0)x\(v["height"]?.intValue ?? 0) \(v["format"]?.stringValue ?? "") \(v["bytes"]?.intValue ?? 0) bytes \(v["key"]?.stringValue ?? "")")
    }
    if let e = r["exif"], e != .emptyObject { Output.line("  exif        \(Output.text(e.jsonString))") }
    return 0
}

let updateCommand = clientCommand("update", "ID [--memo T] [--field K=V]... [--if-tag TAG] [--json]",
    "Changes a record's memo and fields (K= with no value removes a field). With --if-tag, fails with conflict if the record changed since.",
    extra: [.value("memo", "TEXT", "the new memo"), .value("field", "K=V", "set a field (typed like enqueue); K= removes it", repeats: true),
            .value("if-tag", "TAG", "only if the record's change_tag is still TAG"),
            .value("acl", "JSON", #"replace the ACL: {"read": ["bob"], "write": ["carol"], "public": true}"#)],
    positionals: 1...1) { c, args in
    var req: [String: JSONValue] = [ControlArgument.record: .string(args.positionals[0])]
    if let m = args.value("memo") { req["memo"] = .string(m) }
    if let t = args.value("if-tag") { req["if_tag"] = .string(t) }
    if let acl = try aclOption(args) { req["acl"] = acl }
    var fields: [String: JSONValue] = [:]
    for f in args.all("field") {
        if f.hasSuffix("="), !f.dropLast().contains("=") { fields[String(f.dropLast()).components(separatedBy: ":")[0]] = .null; continue }
        let (k, v) = try parseField(f)
        fields[k] = v
    }
    if !fields.isEmpty { req["fields"] = .object(fields) }
    let r = try c.request(.update, req)
    if args.has("json") { Output.json(r) } else { Output.line("updated \(r["id"]?.stringValue ?? ""); change_tag \(r["change_tag"]?.stringValue ?? "")") }
    return 0
}

let deleteCommand = clientCommand("delete", "ID [--purge] [--json]",
    """
    Moves a record, and the records that refer to it with deleteSelf, to the trash (restore-record brings them back).
    --purge deletes at once, with the assets nothing else uses (your own records; an admin's: any).
    """,
    extra: [.flag("purge", "skip the trash: delete at once (also empties the record from the trash)")], positionals: 1...1) { c, args in
    var req: [String: JSONValue] = [ControlArgument.record: .string(args.positionals[0])]
    if args.has("purge") { req[ControlArgument.purge] = true }
    let r = try c.request(.delete, req)
    if args.has("json") { Output.json(r); return 0 }
    let deleted = (r["deleted"]?.arrayValue ?? []).compactMap(\.stringValue)
    let trashed = Set((r["trashed"]?.arrayValue ?? []).compactMap(\.stringValue))
    let purged = deleted.filter { !trashed.contains($0) }
    // Only an admin's reply says how many store objects no record uses any more.
    let released = r["released_assets"]?.arrayValue.map { "; released \($0.count) assets" } ?? ""
    if !trashed.isEmpty { Output.line("moved to the trash: \(deleted.filter(trashed.contains).joined(separator: ", "))") }
    if !purged.isEmpty || trashed.isEmpty { Output.line("deleted \(purged.joined(separator: ", "))\(released)") }
    return 0
}

let trashCommand = clientCommand("trash", "[--limit N] [--cursor C] [--json]",
    """
    Lists the deleted records in the trash that you could read, the latest deleted first: id, type, memo (cut),
    when deleted and when purged. --json prints {"records": [...], "cursor": ...}.
    """,
    extra: [.value("limit", "N", "records per page, 1 to 1000 (default 100)"), .value("cursor", "C", "the next page of an earlier listing")]) { c, args in
    var req: [String: JSONValue] = [:]
    if let n = try args.int("limit") { req[ControlArgument.limit] = .int(n) }
    if let cur = args.value("cursor") { req[ControlArgument.cursor] = .string(cur) }
    let r = try c.request(.trash, req)
    if args.has("json") { Output.json(r); return 0 }
    Output.table(["id", "type", "memo", "owner", "deleted", "purged after"], (r["records"]?.arrayValue ?? []).map { rec in
        [rec["id"]?.stringValue ?? "", Output.text(rec["type"]?.stringValue ?? ""), Output.text(String((rec["memo"]?.stringValue ?? "").prefix(40))),
         Output.text(rec["owner"]?.stringValue ?? ""), rec["deleted"]?.stringValue ?? "", rec["purge_after"]?.stringValue ?? ""]
    })
    if let cursor = r["cursor"]?.stringValue { Output.line(Output.tint("more: --cursor \(cursor)", .dim)) }
    return 0
}

let restoreRecordCommand = clientCommand("restore-record", "ID [--json]",
    "Brings a record back from the trash (your own; an admin's: any), with the records its delete trashed with it.",
    positionals: 1...1) { c, args in
    let r = try c.request(.restoreRecord, [ControlArgument.record: .string(args.positionals[0])])
    if args.has("json") { Output.json(r); return 0 }
    Output.line("restored \((r["restored"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ", "))")
    return 0
}

let assetCommand = clientCommand("asset", "ID RENDITION -o FILE",
    "Writes a record's asset (original, display, thumbnail, ...) to FILE, if the record's ACL lets you read it.",
    extra: [.value("o", "FILE", "where to write the bytes")], positionals: 2...2) { c, args in
    guard let out = args.value("o") else { throw UsageError("asset needs -o FILE") }
    let r = try c.request(.asset, [ControlArgument.record: .string(args.positionals[0]), "rendition": .string(args.positionals[1])])
    let download = try AssetDownload(into: out, expectedBytes: r["bytes"]?.intValue ?? -1, sha256: r["sha256"]?.stringValue)
    try download.receive(from: c, id: c.lastRequestID)
    if args.has("json") { Output.json(["key": r["key"] ?? .null, "bytes": .int(download.written), "file": .string(out)]) }
    else { Output.line("wrote \(download.written) bytes to \(out)") }
    return 0
}

let changesCommand = clientCommand("changes", "--since N [--limit N] [--json]",
    "Lists record changes (create, update, delete) after change number N, oldest first: catch up on what you missed.",
    extra: [.value("since", "N", "the last change number you have seen (0 for all)"), .value("limit", "N", "at most this many (default 100)")]) { c, args in
    guard let since = try args.int("since") else { throw UsageError("changes needs --since N") }
    var req: [String: JSONValue] = ["since": .int(since)]
    if let l = try args.int("limit") { req["limit"] = .int(l) }
    let r = try c.request(.changes, req)
    if args.has("json") { Output.json(r); return 0 }
    Output.table(["seq", "time", "op", "type", "record"], (r["changes"]?.arrayValue ?? []).map {
        [String($0["seq"]?.intValue ?? 0), $0["time"]?.stringValue ?? "", $0["op"]?.stringValue ?? "", $0["type"]?.stringValue ?? "",
         $0["record_id"]?.stringValue ?? ""]
    })
    return 0
}
