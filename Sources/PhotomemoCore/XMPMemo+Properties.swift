import CXML2
import Foundation

/// Reading the properties `XMPMemo` maps out of a parsed libxml2 tree: by namespace URI,
/// as attributes or elements, language alternatives and lists (`rdf:Alt`, `Bag`, `Seq`).
extension XMPMemo {
    /// The first value of each property, in document order.
    struct Found {
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
        let s = raw.trimmingCharacters(in: .whitespacesAndNewlines)
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
        return String(cString: raw).trimmingCharacters(in: .whitespacesAndNewlines)
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
