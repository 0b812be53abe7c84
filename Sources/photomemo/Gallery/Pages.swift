import Foundation
import PhotomemoCore

/// The gallery's two kinds of page, built only from `HTML` values (so every record value
/// is escaped): `index.html`, a grid of cards in the query's order, and `r/<id>.html`,
/// one record in full. Neither has any script.
enum GalleryPages {
    private typealias A = HTML.Attribute

    private static func el(_ name: String, _ attributes: [HTML.Attribute] = [], _ children: HTML...) -> HTML {
        HTML.element(name, attributes, children)
    }

    /// `index.html`: a card per record, `records` in order; `summary` says what was queried.
    /// `hasImage` says whether an asset's file is in the gallery (one that could not be
    /// fetched is left out rather than shown broken).
    static func index(_ records: [GalleryRecord], summary: String, inGallery: [String: GalleryRecord],
                      hasImage: (GalleryRecord.Asset) -> Bool) -> String {
        let cards = records.map { card($0, inGallery: inGallery, hasImage: hasImage) }
        let header = el("header", [], el("h1", [], "photomemo gallery"),
                        el("p", [.text("class", "muted")], HTML("\(records.count) record\(records.count == 1 ? "" : "s") · \(summary)")))
        let main = el("main", [], records.isEmpty ? el("p", [], "No records match.") : HTML.element("ul", [.text("class", "grid")], cards))
        return HTML.document(title: "photomemo gallery", stylesheet: GalleryPath([GalleryStylesheet.fileName], fromDepth: 0), body: [header, main])
    }

    private static func card(_ r: GalleryRecord, inGallery: [String: GalleryRecord], hasImage: (GalleryRecord.Asset) -> Bool) -> HTML {
        let page = GalleryPath(["r", r.pageName], fromDepth: 0)
        let picture: HTML
        if let t = r.thumbnail, hasImage(t) {
            picture = image(t, alt: "Photo: \(r.title)", depth: 0)
        } else {
            picture = el("div", [.text("class", "noimage"), .text("role", "img"), .text("aria-label", "no image")], "no image")
        }
        let body = el("div", [.text("class", "body")],
                      el("p", [.text("class", "memo")], el("a", [.path("href", page)], HTML(r.title))),
                      el("span", [.text("class", "type")], HTML(r.type)),
                      fieldList(r, inGallery: inGallery, depth: 0),
                      el("p", [.text("class", "muted")], el("time", [.text("datetime", r.created)], HTML(galleryDate(r.created)))))
        return el("li", [.text("class", "card"), .text("id", "card-" + r.id)],
                  el("a", [.path("href", page), .text("tabindex", "-1"), .text("aria-hidden", "true")], picture), body)
    }

    private static func fieldList(_ r: GalleryRecord, inGallery: [String: GalleryRecord], depth: Int) -> HTML {
        guard !r.fields.isEmpty else { return .empty }
        return HTML.element("dl", [.text("class", "fields")], r.fields.flatMap { f in
            [el("dt", [], HTML(f.name)), el("dd", [], value(f.value, inGallery: inGallery, depth: depth))]
        })
    }

    /// A field's value: a reference is a link to the referenced record's page when that
    /// record is in this gallery, else its id; a list is comma-separated; a date is readable.
    private static func value(_ v: JSONValue, inGallery: [String: GalleryRecord], depth: Int) -> HTML {
        switch v {
        case .object(let o):
            guard let ref = o["ref"]?.stringValue else { return HTML(v.jsonString) }
            let note = o["action"]?.stringValue == "deleteSelf" ? " (deleteSelf)" : ""
            guard let target = inGallery[ref] else { return HTML("\(ref) (not in this gallery)\(note)") }
            return HTML.join([el("a", [.path("href", GalleryPath(["r", target.pageName], fromDepth: depth)), .text("class", "ref")],
                                 HTML("\(target.type): \(target.title)")), HTML(note)])
        case .array(let items): return HTML(items.map { $0.stringValue ?? $0.jsonString }.joined(separator: ", "))
        case .string(let s): return HTML(galleryDate(s))
        default: return HTML(v.jsonString)
        }
    }

    private static func image(_ a: GalleryRecord.Asset, alt: String, depth: Int) -> HTML {
        var attributes: [A] = [.path("src", GalleryPath(["assets", a.fileName], fromDepth: depth)), .text("alt", alt)]
        if let w = a.width, let h = a.height { attributes += [.text("width", String(w)), .text("height", String(h))] }
        return HTML.element("img", attributes + [.text("decoding", "async")])
    }

    /// `r/<id>.html`: the display image, the memo, every field, EXIF, asset sizes and the
    /// record's own bookkeeping.
    static func record(_ r: GalleryRecord, inGallery: [String: GalleryRecord], hasImage: (GalleryRecord.Asset) -> Bool) -> String {
        let back = el("p", [], el("a", [.path("href", GalleryPath(["index.html"], fromDepth: 1))], "← All records"))
        let header = el("header", [], back, el("h1", [], HTML(r.title)), el("span", [.text("class", "type")], HTML(r.type)))
        var parts: [HTML] = []
        if let d = r.display, hasImage(d) { parts.append(el("figure", [], image(d, alt: "Photo: \(r.title)", depth: 1))) }
        // The heading is the memo's first line; the whole memo follows when it says more.
        if r.memo.isEmpty { parts.append(el("p", [.text("class", "muted")], "(no memo)")) }
        else if r.memo != r.title { parts.append(el("p", [.text("class", "memo-text")], HTML(r.memo))) }
        if !r.fields.isEmpty {
            parts.append(section("Fields", r.fields.map { ($0.name, value($0.value, inGallery: inGallery, depth: 1)) }))
        }
        parts.append(section("Photo", exifRows(r.exif)))
        if !r.assets.isEmpty {
            parts.append(section("Assets", r.assets.map { a in
                let size = a.width.flatMap { w in a.height.map { "\(w)×\($0) " } } ?? ""
                return (a.rendition, HTML("\(size)\(a.format) · \(byteCount(a.bytes))"))
            }))
        }
        parts.append(section("Record", [("id", el("code", [], HTML(r.id))), ("type", HTML(r.type)), ("owner", HTML(r.owner ?? "-")),
                                        ("created", HTML(galleryDate(r.created))), ("modified", HTML(galleryDate(r.modified))),
                                        ("change tag", el("code", [], HTML(r.changeTag)))]))
        return HTML.document(title: "\(r.type): \(r.title)", stylesheet: GalleryPath([GalleryStylesheet.fileName], fromDepth: 1),
                             body: [header, HTML.element("main", [], parts)])
    }

    /// Taken, camera, orientation; GPS only where the job kept it.
    private static func exifRows(_ exif: JSONValue) -> [(String, HTML)] {
        var rows: [(String, HTML)] = []
        if let t = exif["taken"]?.stringValue { rows.append(("taken", HTML(galleryDate(t)))) }
        let camera = [exif["make"]?.stringValue, exif["model"]?.stringValue].compactMap { $0 }.joined(separator: " ")
        if !camera.isEmpty { rows.append(("camera", HTML(camera))) }
        if let o = exif["orientation"]?.intValue { rows.append(("orientation", HTML(String(o)))) }
        if let lat = exif["gps"]?["latitude"]?.doubleValue, let lon = exif["gps"]?["longitude"]?.doubleValue {
            rows.append(("GPS", HTML(String(format: "%.5f, %.5f", lat, lon))))
        }
        return rows.isEmpty ? [("EXIF", HTML("none"))] : rows
    }

    private static func section(_ title: String, _ rows: [(String, HTML)]) -> HTML {
        el("section", [], el("h2", [], HTML(title)),
           HTML.element("table", [], rows.map { el("tr", [], el("th", [.text("scope", "row")], HTML($0.0)), el("td", [], $0.1)) }))
    }

    static func byteCount(_ n: Int64) -> String {
        if n < 1024 { return "\(n) B" }
        if n < 1024 * 1024 { return String(format: "%.1f KB", Double(n) / 1024) }
        return String(format: "%.1f MB", Double(n) / 1_048_576)
    }
}
