import CXML2
import Foundation
import StageKit

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
            let why = ctxt.pointee.lastError.message.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "malformed"
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
}

