import Foundation
import StageKit

/// A record (DESIGN.md, "Records"): typed fields, owner and ACL, asset keys, EXIF, and a
/// change tag for optimistic concurrency.
public struct Record: Sendable, Equatable {
    public var id: String
    public var type: String
    public var memo: String
    public var fields: [String: JSONValue]
    public var owner: String?
    public var acl: ACL
    public var assets: JSONValue
    public var exif: JSONValue
    public var created: Double
    public var modified: Double
    public var changeTag: String
    /// The receipt: where the photo came from (inbox-relative path, or the memo line's
    /// `photo`) and the SHA-256 of its original, as stored; nil for a memo without one.
    public var source: String? = nil
    public var sha256: String? = nil

    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "id": .string(id), "type": .string(type), "memo": .string(memo), "fields": .object(fields),
            "acl": acl.json, "assets": assets, "exif": exif, "created": .string(isoTimestamp(created)),
            "modified": .string(isoTimestamp(modified)), "change_tag": .string(changeTag),
        ]
        o["owner"] = owner.map(JSONValue.string) ?? .null
        o["source"] = source.map(JSONValue.string) ?? .null
        o["sha256"] = sha256.map(JSONValue.string) ?? .null
        return .object(o)
    }
}

/// A field value by the typing rule of DESIGN.md: integers and doubles are numbers, a
/// string in full ISO-8601 date-time form is a date, `{"ref": ...}` is a reference.
enum FieldValue: Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case date(Double, String)
    case list([String])
    case reference(String, deleteSelf: Bool)

    init?(_ v: JSONValue) {
        switch v {
        case .string(let s): self = ISODate.isDateTime(s) ? .date(ISODate.parse(s)!, s) : .string(s)
        case .int(let i): self = .number(Double(i))
        case .double(let d): self = .number(d)
        case .bool(let b): self = .bool(b)
        case .array(let a): self = .list(a.compactMap(\.stringValue))
        case .object(let o):
            guard let ref = o["ref"]?.stringValue else { return nil }
            self = .reference(ref, deleteSelf: o["action"]?.stringValue == "deleteSelf")
        case .null: return nil
        }
    }

    /// Rows of the typed side table: (kind, text, number, deleteSelf).
    var rows: [(String, String?, Double?, Bool)] {
        switch self {
        case .string(let s): [("s", s, nil, false)]
        case .number(let n): [("n", nil, n, false)]
        case .bool(let b): [("b", nil, b ? 1 : 0, false)]
        case .date(let d, let s): [("d", s, d, false)]
        case .list(let items): items.map { ("l", $0, nil, false) }
        case .reference(let id, let del): [("r", id, nil, del)]
        }
    }
}
