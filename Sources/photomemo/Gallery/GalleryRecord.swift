import Foundation
import PhotomemoCore
import StageKit

/// A record as the gallery shows it, read from the daemon's record JSON (docs/records-and-queries.md,
/// "Records and queries"), with the renditions it picks for the card and the page.
struct GalleryRecord {
    struct Asset {
        let rendition: String
        let key: String
        let bytes: Int64
        let sha256: String?
        let width: Int?
        let height: Int?
        let format: String

        /// The content-addressed name in `DIR/assets/`: the SHA-256 the record states (or
        /// of the store key, for a store that stated none) and an extension browsers know.
        var fileName: String {
            let hex = sha256.flatMap { $0.count == 64 && $0.allSatisfy(\.isHexDigit) ? $0.lowercased() : nil }
                ?? SHA256.hex(Data(key.utf8))
            return hex + "." + (GalleryRecord.browserFormats[format] ?? "bin")
        }

        var showable: Bool { GalleryRecord.browserFormats[format] != nil }
    }

    /// Formats every browser shows, with their file extensions (HEIC is not one of them).
    static let browserFormats = ["jpeg": "jpg", "jpg": "jpg", "png": "png", "webp": "webp", "gif": "gif", "avif": "avif"]

    let id: String
    let type: String
    let memo: String
    let fields: [(name: String, value: JSONValue)]
    let owner: String?
    let assets: [Asset]
    let exif: JSONValue
    let created: String
    let modified: String
    let changeTag: String
    let json: JSONValue

    init?(_ json: JSONValue) {
        guard let id = json["id"]?.stringValue, !id.isEmpty else { return nil }
        self.id = id
        self.json = json
        type = json["type"]?.stringValue ?? ""
        memo = json["memo"]?.stringValue ?? ""
        fields = (json["fields"]?.objectValue ?? [:]).sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
        owner = json["owner"]?.stringValue
        assets = (json["assets"]?.objectValue ?? [:]).sorted { $0.key < $1.key }.compactMap { name, a in
            guard let key = a["key"]?.stringValue else { return nil }
            return Asset(rendition: name, key: key, bytes: a["bytes"]?.intValue ?? 0, sha256: a["sha256"]?.stringValue,
                         width: a["width"]?.intValue.map(Int.init), height: a["height"]?.intValue.map(Int.init),
                         format: (a["format"]?.stringValue ?? "").lowercased())
        }
        exif = json["exif"] ?? .emptyObject
        created = json["created"]?.stringValue ?? ""
        modified = json["modified"]?.stringValue ?? ""
        changeTag = json["change_tag"]?.stringValue ?? json["change_tag"]?.jsonString ?? ""
    }

    /// The card's image: `thumbnail`, else the smallest showable rendition.
    var thumbnail: Asset? {
        assets.first { $0.rendition == "thumbnail" && $0.showable }
            ?? assets.filter(\.showable).min { ($0.width ?? .max) < ($1.width ?? .max) }
    }

    /// The page's image: `display` (or `full`, as in hello-cloudkit), else the largest
    /// showable rendition that is not the original, else the original, else the thumbnail.
    var display: Asset? {
        let showable = assets.filter(\.showable)
        return showable.first { $0.rendition == "display" } ?? showable.first { $0.rendition == "full" }
            ?? showable.filter { $0.rendition != "original" && $0.rendition != "thumbnail" }.max { ($0.width ?? 0) < ($1.width ?? 0) }
            ?? showable.first { $0.rendition == "original" } ?? thumbnail
    }

    /// The asset files its card and page use.
    var shownAssets: [Asset] {
        var out: [Asset] = []
        for a in [thumbnail, display].compactMap({ $0 }) where !out.contains(where: { $0.fileName == a.fileName }) { out.append(a) }
        return out
    }

    /// Ids of the records its reference fields point at.
    var referencedIDs: [String] {
        fields.compactMap { $0.value["ref"]?.stringValue }
    }

    /// The file name of its page in `DIR/r/`: the id when it is a plain token (ids are),
    /// else a hex of it, so no id can name a path.
    var pageName: String { GalleryRecord.pageName(id) }

    static func pageName(_ id: String) -> String {
        let plain = id.count <= 128 && id.utf8.allSatisfy { (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x5F }
        return (plain ? id : "x" + SHA256.hex(Data(id.utf8))) + ".html"
    }

    /// A short name for links and alt text: the memo's first line, else type and id.
    var title: String {
        let first = memo.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        let trimmed = first.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty { return "\(type.isEmpty ? "Record" : type) \(id)" }
        return trimmed.count > 80 ? String(trimmed.prefix(79)) + "…" : trimmed
    }
}

/// `2026-12-01T08:10:02.123Z` → `2026-12-01 08:10 UTC`; anything else as it is.
func galleryDate(_ iso: String) -> String {
    let chars = Array(iso)
    let digits = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15]
    guard chars.count >= 16, digits.allSatisfy({ chars[$0].isASCII && chars[$0].isNumber }),
          chars[4] == "-", chars[7] == "-", chars[10] == "T", chars[13] == ":" else { return iso }
    return String(chars[0..<10]) + " " + String(chars[11..<16]) + (iso.hasSuffix("Z") ? " UTC" : "")
}
