/// The gallery's one HTML helper, and the only place that escapes. Pages are built from
/// `HTML` values: text is always escaped for its context, attribute values always quoted
/// and escaped, and a link or image source can only be a `GalleryPath` (a path inside
/// the gallery folder), so no page can point at a scheme, a host or a parent folder.
struct HTML: Sendable, ExpressibleByStringLiteral {
    /// Markup that is already safe to emit as-is; only this file builds it.
    fileprivate(set) var markup: String

    fileprivate init(markup: String) { self.markup = markup }

    /// Escaped text (`<script>` shows as text).
    init(_ text: String) { markup = HTML.escape(text, quotes: false) }
    init(stringLiteral text: String) { self.init(text) }

    static let empty = HTML(markup: "")

    /// An attribute: a text value, or a URL that must be a path inside the gallery.
    enum Attribute: Sendable {
        case text(String, String)
        case path(String, GalleryPath)

        /// Why this attribute may not be written, or nil: a URL goes through `.path`;
        /// script and inline style have no way in at all.
        var misuse: String? {
            switch self {
            case .text(let name, _):
                HTML.urlAttributes.contains(name) || name.hasPrefix("on") || name == "style" ? "\(name) cannot take a text value" : nil
            case .path(let name, _):
                HTML.urlAttributes.contains(name) ? nil : "\(name) does not take a URL"
            }
        }

        var rendered: String {
            precondition(misuse == nil, misuse ?? "")  // a template's programming error, never input
            switch self {
            case .text(let name, let value): return " \(HTML.checkedName(name))=\"\(HTML.escape(value, quotes: true))\""
            case .path(let name, let path): return " \(HTML.checkedName(name))=\"\(HTML.escape(path.url, quotes: true))\""
            }
        }
    }

    /// Why an element may not be written, or nil.
    static func misuse(element name: String) -> String? {
        forbiddenElements.contains(name) ? "the gallery writes no <\(name)>" : nil
    }

    /// `<name attrs>children</name>`; void elements (`img`, `meta`, `link`) take no children.
    static func element(_ name: String, _ attributes: [Attribute] = [], _ children: [HTML] = []) -> HTML {
        precondition(misuse(element: name) == nil, misuse(element: name) ?? "")
        let open = "<" + checkedName(name) + attributes.map(\.rendered).joined() + ">"
        if voidElements.contains(name) {
            precondition(children.isEmpty, "<\(name)> cannot have children")
            return HTML(markup: open)
        }
        return HTML(markup: open + children.map(\.markup).joined() + "</\(name)>")
    }

    static func join(_ parts: [HTML], separator: HTML = .empty) -> HTML {
        HTML(markup: parts.map(\.markup).joined(separator: separator.markup))
    }

    /// A whole page: doctype, `<html lang>`, head and body.
    static func document(title: String, stylesheet: GalleryPath, body: [HTML]) -> String {
        let head = element("head", [], [
            element("meta", [.text("charset", "utf-8")]),
            element("meta", [.text("name", "viewport"), .text("content", "width=device-width, initial-scale=1")]),
            element("meta", [.text("name", "color-scheme"), .text("content", "light dark")]),
            // Defence in depth: even a page that somehow held markup could run no script
            // and load nothing but images and styles of its own origin. `file:` because
            // browsers differ on whether 'self' matches anything when a page is opened from
            // a file (Chromium treats 'self' there as every file: URL anyway).
            element("meta", [.text("http-equiv", "Content-Security-Policy"),
                             .text("content", "default-src 'none'; img-src 'self' file:; style-src 'self' file:; base-uri 'none'; form-action 'none'")]),
            element("meta", [.text("name", "referrer"), .text("content", "no-referrer")]),
            element("title", [], [HTML(title)]),
            element("link", [.text("rel", "stylesheet"), .path("href", stylesheet)]),
        ])
        return "<!DOCTYPE html>\n" + element("html", [.text("lang", "en")], [head, element("body", [], body)]).markup + "\n"
    }

    private static let voidElements: Set<String> = ["img", "meta", "link", "br"]
    fileprivate static let urlAttributes: Set<String> = ["href", "src", "srcset", "action", "formaction", "poster", "data", "cite"]
    /// Elements that run or embed something: never written.
    private static let forbiddenElements: Set<String> = ["script", "style", "iframe", "object", "embed", "frame", "base", "form"]

    /// Element and attribute names come from this program, never from a record; checked anyway.
    private static func checkedName(_ name: String) -> String {
        precondition(!name.isEmpty && name.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D },
                     "not an HTML name: \(name)")
        return name
    }

    /// Text and attribute escaping. NUL (which parsers turn into U+FFFD) is replaced here
    /// so the output is the same in every browser.
    static func escape(_ s: String, quotes: Bool) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for ch in s.unicodeScalars {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"" where quotes: out += "&quot;"
            case "'" where quotes: out += "&#39;"
            case "\u{0}": out += "\u{FFFD}"
            default: out.unicodeScalars.append(ch)
            }
        }
        return out
    }
}

/// A relative URL from one page of the gallery to a file in it: `depth` folders up (a
/// record page in `r/` is at depth 1), then segments, each percent-encoded. A segment can
/// never be empty, `.` or `..`, so the URL stays inside the gallery folder.
struct GalleryPath: Sendable, Equatable {
    let url: String

    init(_ segments: [String], fromDepth depth: Int) {
        precondition(!segments.isEmpty && depth >= 0)
        for s in segments { precondition(!s.isEmpty && s != "." && s != "..", "not a gallery path segment: \(s)") }
        url = String(repeating: "../", count: depth) + segments.map(GalleryPath.percentEncode).joined(separator: "/")
    }

    /// Everything but RFC 3986's unreserved characters is encoded, so a segment cannot
    /// start a scheme (`:`), a query, a fragment or another segment.
    static func percentEncode(_ segment: String) -> String {
        var out = ""
        for b in segment.utf8 {
            switch b {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E: out.unicodeScalars.append(Unicode.Scalar(b))
            default: out += "%" + String(b, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

private extension String {
    func leftPadded(to n: Int) -> String { count >= n ? self : String(repeating: "0", count: n - count) + self }
}
