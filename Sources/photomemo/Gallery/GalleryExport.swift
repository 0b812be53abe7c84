import ControlProtocol
import Foundation
import StageKit

/// One run of `photomemo gallery`: fetches the records the caller may read (over the
/// socket, as the caller), downloads the images their cards and pages show, writes the
/// pages whose inputs changed since the last run and removes what is no longer shown.
final class GalleryExport {
    struct Query {
        var predicate = "TRUEPREDICATE"
        var type: String?
        var sort = "-created"
        var limit: Int?  // nil: every matching record
    }

    struct Summary {
        var records = 0, written = 0, unchanged = 0, removed = 0
        var assetsFetched = 0, bytesFetched: Int64 = 0, assetsRemoved = 0
        var warnings: [String] = []
    }

    let client: ControlClient
    /// Called as pages are written: (done, total).
    var progress: (Int, Int) -> Void = { _, _ in }

    init(client: ControlClient) { self.client = client }

    /// Pages through `query` (keyset cursor, up to 1000 a request) until the limit.
    func fetch(_ query: Query) throws -> [GalleryRecord] {
        var records: [GalleryRecord] = []
        var seen: Set<String> = []
        var cursor: String?
        repeat {
            var req: [String: JSONValue] = ["predicate": .string(query.predicate), "sort": .string(query.sort)]
            req["limit"] = .int(Int64(min(1000, (query.limit ?? .max) - records.count)))
            if let t = query.type { req["type"] = .string(t) }
            if let cursor { req["cursor"] = .string(cursor) }
            let page = try client.request(.query, req)
            for json in page["records"]?.arrayValue ?? [] {
                if let r = GalleryRecord(json), seen.insert(r.id).inserted { records.append(r) }
            }
            cursor = page["cursor"]?.stringValue
        } while cursor != nil && records.count < (query.limit ?? .max)
        return records
    }

    /// Writes `records` into `folder`; `text` describes the query on the index page.
    func write(_ records: [GalleryRecord], to folder: GalleryFolder, summary text: String) throws -> Summary {
        var summary = Summary(records: records.count)
        let context = GalleryPages.Context(inGallery: Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a }),
                                           hasImage: { [folder] in folder.exists($0.fileName, in: folder.assets) })
        let old = GalleryManifest.load(from: folder)
        var manifest = GalleryManifest()
        let stale = records.filter { needsPage($0, old.records[$0.id], context, folder) }
        let staleIDs = Set(stale.map(\.id))
        for (i, r) in stale.enumerated() {
            progress(i, stale.count)
            var complete = true
            for a in r.shownAssets where !context.hasImage(a) {
                do {
                    summary.bytesFetched += try download(r, a, into: folder)
                    summary.assetsFetched += 1
                } catch let e as PhotomemoError {
                    complete = false
                    summary.warnings.append("record \(r.id): no \(a.rendition) image (\(e.message))")
                }
            }
            try folder.write(GalleryPages.record(r, context), to: r.pageName, in: folder.pages)
            summary.written += 1
            // An entry with no tag is rewritten next run, to try its missing image again.
            manifest.records[r.id] = .init(tag: complete ? r.changeTag : "", refs: refTags(r, context),
                                           assets: r.shownAssets.map(\.fileName), page: r.pageName)
        }
        progress(stale.count, stale.count)
        for r in records where !staleIDs.contains(r.id) {
            manifest.records[r.id] = old.records[r.id]
            summary.unchanged += 1
        }

        try folder.write(GalleryStylesheet.css, to: GalleryStylesheet.fileName, in: folder.top)
        try folder.write(GalleryPages.index(records, summary: text, context), to: "index.html", in: folder.top)
        summary.removed = try folder.prune(folder.pages, keep: Set(manifest.records.values.map(\.page))).count
        summary.assetsRemoved = try folder.prune(folder.assets, keep: Set(manifest.records.values.flatMap(\.assets))).count
        try manifest.save(to: folder)
        return summary
    }

    /// A page is made from its record and the records it links to (a link's text is their
    /// title), so it is rewritten when any of their change tags differ, or when it or one
    /// of its images is missing.
    private func needsPage(_ r: GalleryRecord, _ entry: GalleryManifest.Entry?, _ context: GalleryPages.Context, _ folder: GalleryFolder) -> Bool {
        guard let entry, entry.tag == r.changeTag, entry.refs == refTags(r, context), entry.page == r.pageName else { return true }
        return !folder.exists(r.pageName, in: folder.pages) || !r.shownAssets.allSatisfy(context.hasImage)
    }

    /// The change tags of the records `r` links to, "" for one not in this gallery.
    private func refTags(_ r: GalleryRecord, _ context: GalleryPages.Context) -> [String: String] {
        Dictionary(r.referencedIDs.map { ($0, context.inGallery[$0]?.changeTag ?? "") }, uniquingKeysWith: { a, _ in a })
    }

    /// One rendition through the socket's `asset` stream, checked against its SHA-256.
    private func download(_ r: GalleryRecord, _ a: GalleryRecord.Asset, into folder: GalleryFolder) throws -> Int64 {
        let reply = try client.request(.asset, [ControlArgument.record: .string(r.id), ControlArgument.rendition: .string(a.rendition)])
        let d = try AssetDownload(into: folder.assets, name: a.fileName, expectedBytes: reply["bytes"]?.intValue ?? -1,
                                  sha256: reply["sha256"]?.stringValue ?? a.sha256)
        try d.receive(from: client, id: client.lastRequestID)
        return d.written
    }
}
