import ControlProtocol
import Foundation
import PhotomemoCore
import Runtime
import StageKit

/// backup, restore and verify: keeping a home for months (docs/operations.md, "Backup and restore").

/// Long enough for a backup or a verify of a large store; the daemon answers when done.
let maintenanceTimeoutMs: Int32 = 24 * 3600 * 1000

let backupCommand = clientCommand("backup", "DIR [--json]",
    "Copies the running daemon's journal and records (one consistent instant), its store's objects (hard links where the filesystem allows), the job definition and a manifest (written last) into the new or empty folder DIR, while it serves. Admins only.",
    positionals: 1...1) { c, args in
    let dir = Home(args.positionals[0]).root
    let r = try c.request(.backup, [ControlArgument.folder: .string(dir)], timeoutMs: maintenanceTimeoutMs)
    if args.has("json") { Output.json(r); return 0 }
    let m = r["manifest"] ?? .null
    let objects = m["objects"]?.arrayValue ?? []
    let copied = objects.filter { $0["copied"] == .bool(true) }.count
    Output.line("backup in \(dir): \(m["engine"]?.stringValue ?? "?") database (journal schema \(m["schemas"]?["journal"]?.intValue ?? 0), index \(m["schemas"]?["record_index"]?.intValue ?? 0)), "
        + (copied == objects.count ? "\(copied) store objects" : "\(objects.count) store objects named (\(m["store"]?.stringValue ?? "?") keeps them)"))
    for (what, list) in [("damaged in the store, left out", m["damaged"]), ("named by records but not in the store", m["missing"])] {
        let keys = (list?.arrayValue ?? []).compactMap(\.stringValue)
        if !keys.isEmpty { Output.line("  \(keys.count) \(what) (run photomemo verify): " + keys.prefix(5).joined(separator: ", ")) }
    }
    return 0
}

let restoreCommand = Command(
    name: "restore", synopsis: "DIR --home NEWHOME [--database URL]",
    summary: """
    Makes a new home from a backup folder, without a daemon. Checks first, writing nothing: the manifest is \
    there (a backup that was interrupted has none), every file and object has its size and sha256, the schema \
    versions are ones this photomemo opens, NEWHOME is absent or empty. Then writes NEWHOME, fsyncs it, and \
    renames it into place. A PostgreSQL backup restores into the empty database --database names.
    """,
    options: [
        .value("home", "DIR", "NEWHOME, the new home to write (absent or an empty folder)"),
        .value("database", "URL", "for a PostgreSQL backup: the empty database to restore into (pg_restore)"),
        .flag("json", "print what was restored as JSON"),
    ],
    run: { args in
        guard args.positionals.count == 1 else { throw UsageError("usage: photomemo restore DIR --home NEWHOME") }
        guard let home = args.value("home") else { throw UsageError("restore needs --home NEWHOME (the new home to write)") }
        let s = try BackupRestore.restore(from: Home(args.positionals[0]).root, home: Home(home).root, database: args.value("database"))
        if args.has("json") {
            Output.json(["home": .string(s.home), "engine": .string(s.engine), "objects": .int(Int64(s.objects)), "bytes": .int(s.bytes),
                         "job_definition": s.jobDefinition.map(JSONValue.string) ?? .null,
                         "rewritten": .array(s.rewritten.map(JSONValue.string))])
            return 0
        }
        Output.line("restored \(s.engine) database and \(s.objects) store objects (\(s.bytes) bytes checked) into \(s.home)")
        for change in s.rewritten {
            Output.line(change)
        }
        Output.line("start it: photomemo serve --home \(s.home)" + (s.jobDefinition.map { " --job \($0)" } ?? "")
            + (args.value("database").map { " --database \($0)" } ?? ""))
        return 0
    })

let verifyCommand = clientCommand("verify", "[--repair] [--rate MIB] [--json]",
    "Reads every record's assets (the trash's too) back from the store and checks their sha256; lists damaged and missing ones and orphaned objects (in the store, needed by no record and no unfinished job). --repair makes damaged or missing renditions again from a good original and deletes orphans. Reads at most --rate MiB/s (default 32; 0: no cap) so serving goes on. Exit 1 while something is damaged or missing. Admins only.",
    extra: [.flag("repair", "re-make renditions from their original, delete orphans"),
            .value("rate", "MIB", "MiB per second verify may read from the store (default 32; 0: no cap)")]) { c, args in
    var req: [String: JSONValue] = [ControlArgument.repair: .bool(args.has("repair"))]
    if let rate = try args.int("rate") {
        guard rate >= 0 else { throw UsageError("--rate must be 0 (no cap) or a positive number of MiB/s") }
        req[ControlArgument.rate] = .int(rate)
    }
    let r = try c.request(.verify, req, timeoutMs: maintenanceTimeoutMs)
    let problems = (r["damaged"]?.arrayValue ?? []) + (r["missing"]?.arrayValue ?? [])
    let left = problems.filter { $0["repaired"] != .bool(true) }.count
    if args.has("json") {
        Output.json(r)
    } else {
        Output.line("verify: \(r["checked"]?.intValue ?? 0) assets of \(r["records"]?.intValue ?? 0) records checked, \(r["ok"]?.intValue ?? 0) ok, "
            + "\(r["damaged"]?.arrayValue?.count ?? 0) damaged, \(r["missing"]?.arrayValue?.count ?? 0) missing, "
            + "\(r["orphans"]?.arrayValue?.count ?? 0) orphans, \(r["repaired"]?.intValue ?? 0) repaired")
        for p in problems {
            let fix = p["repaired"] == .bool(true) ? "repaired" : p["repair_error"]?.stringValue.map { "not repaired: " + $0 } ?? ""
            Output.line("  \(Output.text(p["record"]) ?? "?") \(Output.text(p["asset"]) ?? "?"): \(Output.text(p["reason"]) ?? "")" + (fix.isEmpty ? "" : " — " + fix))
        }
        for o in r["orphans"]?.arrayValue ?? [] {
            Output.line("  orphan \(Output.text(o["key"]) ?? "?") (\(o["bytes"]?.intValue ?? 0) bytes)" + (o["released"] == .bool(true) ? " — deleted" : ""))
        }
    }
    if left > 0 {
        StandardStream.err("photomemo verify: \(left) asset(s) damaged or missing" + (args.has("repair") ? " and not repaired\n" : "; photomemo verify --repair re-makes renditions\n"))
        return 1
    }
    return 0
}
