import CXML2

/// The memo in an XMP sidecar (what Lightroom, darktable, digiKam and Apple Photos' export
/// write beside a photo), as the memo-line object a JSON sidecar would be:
/// `dc:description` → `memo`, `dc:title` → field `title`, `dc:subject` → field `tags`,
/// `xmp:Rating` → field `rating`. Properties are matched by namespace URI, not prefix, as
/// elements or as attributes of any element (tools write both forms).
///
/// Parsed with libxml2 as a hostile document: UTF-8 only (the encoding is forced, so a
/// declaration cannot switch it), no network, no DTD loaded, no entity substituted, and a
/// document with a DOCTYPE is refused before libxml2 sees it (and again after, should one
/// get through): an XMP packet has no use for one, and entities are what billion-laughs
/// and external-entity (`SYSTEM "file:///etc/passwd"`) attacks are made of.
public enum XMPMemo {
    static let rdf = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    static let dc = "http://purl.org/dc/elements/1.1/"
    static let xmp = "http://ns.adobe.com/xap/1.0/"
    static let xml = "http://www.w3.org/XML/1998/namespace"

    /// xmlInitParser must run once before threads use the parser.
    private static let initialized: Bool = { xmlInitParser(); return true }()

    /// The memo-line object (`memo`, `fields`) the XMP bytes hold; `bad_job` when they are
    /// not a well-formed XMP document or a property has the wrong form.
    public static func memoLine(_ bytes: [UInt8]) throws -> JSONValue {
        guard String(validating: bytes, as: UTF8.self) != nil else { throw bad("is not UTF-8 text") }
        // Bytes, not characters: a DOCTYPE anywhere, even in a comment, is refused.
        if contains(bytes, "<!DOCTYPE") || contains(bytes, "<!ENTITY") {
            throw bad("has a DOCTYPE or entity declaration, which an XMP sidecar never needs (refused unparsed)")
        }
        guard bytes.count < Int(Int32.max) else { throw bad("is too big") }
        _ = initialized
        guard let ctxt = xmlNewParserCtxt() else { throw bad("cannot be parsed (out of memory)") }
        defer { xmlFreeParserCtxt(ctxt) }
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue | XML_PARSE_NOBLANKS.rawValue)
        let doc = bytes.withUnsafeBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buf.count) {
                xmlCtxtReadMemory(ctxt, $0, Int32(buf.count), "sidecar.xmp", "UTF-8", options)
            }
        }
        guard let doc, ctxt.pointee.wellFormed != 0 else {
            if let doc { xmlFreeDoc(doc) }
            let why = ctxt.pointee.lastError.message.map { String(cString: $0).trimmed } ?? "malformed"
            throw bad("is not well-formed XML (line \(ctxt.pointee.lastError.line): \(why))")
        }
        defer { xmlFreeDoc(doc) }
        guard doc.pointee.intSubset == nil, doc.pointee.extSubset == nil else {
            throw bad("has a DOCTYPE, which an XMP sidecar never needs")
        }
        var found = Found()
        if let root = xmlDocGetRootElement(doc) { try found.visit(root) }
        var line: [String: JSONValue] = [:]
        var fields: [String: JSONValue] = [:]
        if let d = found.description { line["memo"] = .string(d) }
        if let t = found.title { fields["title"] = .string(t) }
        if let s = found.subject { fields["tags"] = .array(s.map { .string($0) }) }
        if let r = found.rating { fields["rating"] = .int(Int64(r)) }
        if !fields.isEmpty { line["fields"] = .object(fields) }
        return .object(line)
    }

    static func bad(_ what: String) -> PhotomemoError {
        PhotomemoError(.badJob, "XMP \(what)")
    }

    private static func contains(_ bytes: [UInt8], _ needle: String) -> Bool {
        let n = Array(needle.utf8)
        guard bytes.count >= n.count else { return false }
        var i = 0
        while i <= bytes.count - n.count {
            if bytes[i] == n[0] && bytes[i..<(i + n.count)].elementsEqual(n) { return true }
            i += 1
        }
        return false
    }

    /// The first value of each property, in document order.
    private struct Found {
        var description: String?
        var title: String?
        var subject: [String]?
        var rating: Int?

        mutating func visit(_ node: xmlNodePtr) throws {
            var attr = node.pointee.properties
            while let a = attr {
                if let ns = namespace(a.pointee.ns), let value = text(of: a.pointee.children) {
                    try take(ns, name(a.pointee.name), simple: value, node: nil)
                }
                attr = a.pointee.next
            }
            var child = node.pointee.children
            while let c = child {
                if c.pointee.type == XML_ELEMENT_NODE {
                    if let ns = namespace(c.pointee.ns), try take(ns, name(c.pointee.name), simple: nil, node: c) {
                        // A property's value: its rdf:li are not properties of their own.
                    } else {
                        try visit(c)
                    }
                }
                child = c.pointee.next
            }
        }

        /// Takes a property given as an attribute (`simple`) or an element (`node`);
        /// whether it was one of ours.
        @discardableResult
        mutating func take(_ ns: String, _ name: String, simple: String?, node: xmlNodePtr?) throws -> Bool {
            switch (ns, name) {
            case (XMPMemo.dc, "description"):
                if description == nil { description = simple ?? node.flatMap(XMPMemo.langAlternative) }
            case (XMPMemo.dc, "title"):
                if title == nil { title = simple ?? node.flatMap(XMPMemo.langAlternative) }
            case (XMPMemo.dc, "subject"):
                if subject == nil { subject = simple.map { [$0] } ?? node.map(XMPMemo.list) }
            case (XMPMemo.xmp, "Rating"):
                guard rating == nil, let raw = simple ?? node.flatMap({ XMPMemo.content($0) }) else { break }
                rating = try XMPMemo.integer(raw)
            default:
                return false
            }
            return true
        }
    }

    /// `xmp:Rating` is an integer (Lightroom writes `-1` for rejected); some tools write `3.0`.
    static func integer(_ raw: String) throws -> Int {
        let s = raw.trimmed
        if let i = Int(s) { return i }
        if let d = Double(s), d.rounded() == d, abs(d) < 1e15 { return Int(d) }
        throw bad("xmp:Rating \"\(s.prefix(40))\" is not an integer")
    }

    /// A language alternative (`rdf:Alt` of `rdf:li xml:lang=...`): the `x-default` one, else
    /// the first; a property written as plain text is that text.
    static func langAlternative(_ node: xmlNodePtr) -> String? {
        let items = listItems(node)
        guard !items.isEmpty else { return content(node) }
        let preferred = items.first { lang(of: $0) == "x-default" } ?? items[0]
        return content(preferred) ?? ""
    }

    /// A `rdf:Bag`/`rdf:Seq`/`rdf:Alt` of `rdf:li`: their texts; plain text is one item.
    static func list(_ node: xmlNodePtr) -> [String] {
        let items = listItems(node)
        guard !items.isEmpty else { return content(node).map { [$0] } ?? [] }
        return items.compactMap(content)
    }

    private static func listItems(_ node: xmlNodePtr) -> [xmlNodePtr] {
        var out: [xmlNodePtr] = []
        for container in elements(node) where namespace(container.pointee.ns) == rdf
            && ["Bag", "Seq", "Alt"].contains(name(container.pointee.name)) {
            out += elements(container).filter { namespace($0.pointee.ns) == rdf && name($0.pointee.name) == "li" }
        }
        return out
    }

    private static func elements(_ node: xmlNodePtr) -> [xmlNodePtr] {
        var out: [xmlNodePtr] = []
        var child = node.pointee.children
        while let c = child {
            if c.pointee.type == XML_ELEMENT_NODE { out.append(c) }
            child = c.pointee.next
        }
        return out
    }

    /// The text of an element with no element children, trimmed; nil for a structure.
    static func content(_ node: xmlNodePtr) -> String? {
        guard elements(node).isEmpty, let raw = xmlNodeGetContent(node) else { return nil }
        defer { pm_xml_free(raw) }
        return String(cString: raw).trimmed
    }

    private static func lang(of node: xmlNodePtr) -> String? {
        guard let raw = xmlGetNsProp(node, "lang", xml) else { return nil }
        defer { pm_xml_free(raw) }
        return String(cString: raw)
    }

    private static func text(of node: xmlNodePtr?) -> String? {
        guard let node, let raw = xmlNodeListGetString(node.pointee.doc, node, 1) else { return node == nil ? nil : "" }
        defer { pm_xml_free(raw) }
        return String(cString: raw)
    }
}

private func namespace(_ ns: xmlNsPtr?) -> String? {
    ns?.pointee.href.map { String(cString: $0) }
}

private func name(_ n: UnsafePointer<xmlChar>?) -> String {
    n.map { String(cString: $0) } ?? ""
}

extension String {
    fileprivate var trimmed: String {
        var s = Substring(self)
        while let c = s.first, c.isWhitespace { s.removeFirst() }
        while let c = s.last, c.isWhitespace { s.removeLast() }
        return String(s)
    }
}
