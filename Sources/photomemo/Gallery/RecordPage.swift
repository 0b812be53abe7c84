import Foundation
import StageKit

/// `r/<id>.html`: one record in full — the display image, the memo, every field, EXIF,
/// the size of every rendition and the record's own bookkeeping.
extension GalleryPages {
    static func record(_ r: GalleryRecord, _ context: Context) -> String {
        let back = el("p", [], el("a", [.path("href", GalleryPath(["index.html"], fromDepth: 1))], "← All records"))
        let header = el("header", [], back, el("h1", [], HTML(r.title)), el("span", [.text("class", "type")], HTML(r.type)))
        var parts: [HTML] = []
        // The heading is the memo's first line; the whole memo follows when it says more.
        if r.memo.isEmpty { parts.append(el("p", [.text("class", "muted")], "(no memo)")) }
        else if r.memo != r.title { parts.append(el("p", [.text("class", "memo-text")], HTML(r.memo))) }
        if !r.fields.isEmpty {
            parts.append(section("Fields", r.fields.map { ($0.name, value($0.value, context, depth: 1)) }))
        }
        if !r.assets.isEmpty || r.exif != .emptyObject { parts.append(section("EXIF", exifRows(r.exif))) }
        if !r.assets.isEmpty {
            parts.append(section("Assets", r.assets.map { a in
                let size = a.width.flatMap { w in a.height.map { "\(w)×\($0) " } } ?? ""
                return (a.rendition, HTML("\(size)\(a.format) · \(byteCount(a.bytes))"))
            }))
        }
        parts.append(section("Record", [("id", el("code", [], HTML(r.id))), ("type", HTML(r.type)), ("owner", HTML(r.owner ?? "-")),
                                        ("created", HTML(galleryDate(r.created))), ("modified", HTML(galleryDate(r.modified))),
                                        ("change tag", el("code", [], HTML(r.changeTag)))]))
        // On a wide window the image and the details stand side by side (style.css).
        var main: [HTML] = []
        if let d = r.display, context.hasImage(d) { main.append(el("figure", [], image(d, alt: "Photo: \(r.title)", depth: 1))) }
        main.append(HTML.element("div", [.text("class", "details")], parts))
        return HTML.document(title: "\(r.type): \(r.title)", stylesheet: stylesheet(depth: 1),
                             body: [header, HTML.element("main", [.text("class", "record")], main)])
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
        return rows.isEmpty ? [("EXIF", HTML("none recorded"))] : rows
    }

    private static func section(_ title: String, _ rows: [(String, HTML)]) -> HTML {
        el("section", [], el("h2", [], HTML(title)),
           HTML.element("table", [], rows.map { el("tr", [], el("th", [.text("scope", "row")], HTML($0.0)), el("td", [], $0.1)) }))
    }
}
