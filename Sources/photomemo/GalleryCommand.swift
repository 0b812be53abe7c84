import Foundation
import StageKit

/// `photomemo gallery DIR`: the records this user may read as a static site (DESIGN.md,
/// "Looking at it"). The work is in `Gallery/`; this is the command line and its output.
let galleryCommand = clientCommand("gallery", "DIR [--type T] [--predicate P] [--sort KEYS] [--limit N] [--json]",
    """
    Writes the records you may read as a static site in DIR. index.html is a grid of cards in the query's order,
    r/<id>.html one record, assets/ their images. Re-running rewrites only what changed and removes the pages
    of records that are gone. No script, nothing fetched from outside DIR: open DIR/index.html or serve DIR.
    --json prints a summary: records, written, unchanged, removed, assets_fetched, assets_removed, warnings.
    """,
    extra: [.value("type", "T", "only records of this type"),
            .value("predicate", "P", "only records matching P (default TRUEPREDICATE)"),
            .value("sort", "KEYS", "card order (default -created: newest first)"),
            .value("limit", "N", "at most N records (default: every match)")],
    positionals: 1...1) { c, args in
    var query = GalleryExport.Query()
    if let p = args.value("predicate") { query.predicate = p }
    query.type = args.value("type")
    if let s = args.value("sort") { query.sort = s }
    if let n = try args.int("limit") {
        guard n > 0 else { throw UsageError("--limit must be positive") }
        query.limit = Int(n)
    }
    try GalleryFolder.check(args.positionals[0])  // before fetching anything
    let export = GalleryExport(client: c)
    let records = try export.fetch(query)
    let folder = try GalleryFolder(args.positionals[0])
    defer { folder.release() }
    let bar = Output.isTTY && !args.has("json")
    if bar {
        export.progress = { done, total in
            guard total > 0 else { return }
            Output.write("\r\(Output.bar(Double(done) / Double(total))) \(done)/\(total) pages")
        }
    }
    var described = [query.type.map { "type \($0)" }, query.predicate == "TRUEPREDICATE" ? nil : query.predicate,
                     "sorted by \(query.sort)"].compactMap { $0 }
    if let n = query.limit { described.append("at most \(n)") }
    let s = try export.write(records, to: folder, summary: described.joined(separator: " · "))
    if bar { Output.write("\r\u{1B}[K") }
    for w in s.warnings { StandardStream.err("photomemo gallery: \(w)\n") }
    if args.has("json") {
        Output.json(["dir": .string(folder.root), "records": .int(Int64(s.records)), "written": .int(Int64(s.written)),
                     "unchanged": .int(Int64(s.unchanged)), "removed": .int(Int64(s.removed)),
                     "assets_fetched": .int(Int64(s.assetsFetched)), "bytes_fetched": .int(s.bytesFetched),
                     "assets_removed": .int(Int64(s.assetsRemoved)), "warnings": .array(s.warnings.map(JSONValue.string))])
    } else {
        Output.line("\(folder.root)/index.html: \(s.records) records; \(s.written) pages written, \(s.unchanged) unchanged, "
                    + "\(s.removed) removed; \(s.assetsFetched) images fetched (\(GalleryPages.byteCount(s.bytesFetched))), \(s.assetsRemoved) removed")
    }
    return s.warnings.isEmpty ? 0 : 1
}
