import Foundation
import StageKit

/// The gallery's two kinds of page (`IndexPage.swift`, `RecordPage.swift`), built only
/// from `HTML` values, so every record value is escaped; neither has any script. This
/// file holds what both use.
enum GalleryPages {
    /// What a page may link to: the records in this gallery (by id), and whether an
    /// asset's file is in `assets/` (one that could not be fetched is left out, not shown broken).
    struct Context {
        let inGallery: [String: GalleryRecord]
        let hasImage: (GalleryRecord.Asset) -> Bool
    }

    static func el(_ name: String, _ attributes: [HTML.Attribute] = [], _ children: HTML...) -> HTML {
        HTML.element(name, attributes, children)
    }

    static func stylesheet(depth: Int) -> GalleryPath { GalleryPath([GalleryStylesheet.fileName], fromDepth: depth) }

    static func recordPage(_ r: GalleryRecord, depth: Int) -> GalleryPath { GalleryPath(["r", r.pageName], fromDepth: depth) }

    /// A field's value: a reference is a link to the referenced record's page when that
    /// record is in this gallery, else its id; a list is comma-separated; a date is readable.
    static func value(_ v: JSONValue, _ context: Context, depth: Int) -> HTML {
        switch v {
        case .object(let o):
            guard let ref = o["ref"]?.stringValue else { return HTML(v.jsonString) }
            let note = o["action"]?.stringValue == "deleteSelf" ? " (deleteSelf)" : ""
            guard let target = context.inGallery[ref] else { return HTML("\(ref) (not in this gallery)\(note)") }
            return HTML.join([el("a", [.path("href", recordPage(target, depth: depth)), .text("class", "ref")],
                                 HTML("\(target.type): \(target.title)")), HTML(note)])
        case .array(let items): return HTML(items.map { $0.stringValue ?? $0.jsonString }.joined(separator: ", "))
        case .string(let s): return HTML(galleryDate(s))
        default: return HTML(v.jsonString)
        }
    }

    /// An `<img>` of an asset, with its size so the layout does not jump as it loads.
    static func image(_ a: GalleryRecord.Asset, alt: String, depth: Int) -> HTML {
        var attributes: [HTML.Attribute] = [.path("src", GalleryPath(["assets", a.fileName], fromDepth: depth)), .text("alt", alt)]
        if let w = a.width, let h = a.height { attributes += [.text("width", String(w)), .text("height", String(h))] }
        return HTML.element("img", attributes + [.text("decoding", "async")])
    }

    static func byteCount(_ n: Int64) -> String {
        if n < 1024 { return "\(n) B" }
        if n < 1024 * 1024 { return String(format: "%.1f KB", Double(n) / 1024) }
        return String(format: "%.1f MB", Double(n) / 1_048_576)
    }
}
