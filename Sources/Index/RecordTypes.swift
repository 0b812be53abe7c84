import Foundation
import StageKit

// The values the record index takes and gives, whatever engine holds it.

public enum RecordWriteError: Error, Equatable {
    case notFound
    /// No subscription of that id the asker may see (theirs, or any for an admin).
    case noSubscription
    case forbidden
    /// The record changed since the tag the client named.
    case conflict(current: String)
    /// Field `field` refers to a record that does not exist or that the writer may not read.
    case badReference(field: String, record: String)

    /// What a user is told of a bad reference (the same whether the record exists or not).
    public static func badReferenceMessage(field: String, record: String) -> String {
        "field \"\(field)\": reference to \(record): no such record, or not one you may read"
    }
}

/// What the index stage writes for a job.
public struct RecordInput: Sendable {
    public var jobKey: String
    public var photoSHA256: String?
    public var memo: MemoJob
    public var assets: JSONValue
    public var exif: JSONValue
    public var width: Int?
    public var height: Int?
    /// Where the photo came from (`source`): its inbox-relative path, or the memo line's `photo`.
    public var source: String?
    /// The job brings new bytes for a `keep` inbox's path: they update the record of that
    /// path (same owner) when there is one, instead of making another.
    public var updatesSource: Bool
    /// What the job's stages annotated (`WorkingSet.annotations`): typed fields of the
    /// record where no memo gave one of that name — never over a field the job's memo
    /// gives, nor one the record has (a value a user set is never lost to a stage's).
    public var annotations: [String: JSONValue]
    /// A reprocess (`photomemo reprocess`): new images for the record, whose type, memo
    /// and fields stay as they are now (an edit made while the job was queued is kept).
    public var keepsMemo = false

    public init(jobKey: String, photoSHA256: String?, memo: MemoJob, assets: JSONValue, exif: JSONValue, width: Int?, height: Int?,
                source: String? = nil, updatesSource: Bool = false, annotations: [String: JSONValue] = [:]) {
        self.annotations = annotations
        self.source = source
        self.updatesSource = updatesSource
        self.jobKey = jobKey
        self.photoSHA256 = photoSHA256
        self.memo = memo
        self.assets = assets
        self.exif = exif
        self.width = width
        self.height = height
    }
}

public struct RecordPage: Sendable {
    public let records: [Record]
    public let cursor: String?

    public init(records: [Record], cursor: String?) {
        self.records = records
        self.cursor = cursor
    }
}

public struct RecordChange: Sendable {
    public let seq: Int64
    public let recordID: String
    public let type: String
    public let op: String
    public let at: Double
    public let record: JSONValue

    public init(seq: Int64, recordID: String, type: String, op: String, at: Double, record: JSONValue) {
        (self.seq, self.recordID, self.type, self.op, self.at, self.record) = (seq, recordID, type, op, at, record)
    }

    public var json: JSONValue {
        ["seq": .int(seq), "record_id": .string(recordID), "type": .string(type), "op": .string(op),
         "time": .string(isoTimestamp(at)), "record": record]
    }
}

public struct Subscription: Sendable, Equatable {
    public enum Sink: String, Sendable { case socket, webhook, exec }
    public var id: String
    public var owner: String?
    public var type: String
    public var predicate: String
    public var firesOn: [String]
    public var alert: String?
    public var sink: Sink
    /// Webhook URL, or the exec command as a JSON array.
    public var target: String?
    public var secret: String?

    public init(id: String = "s" + String(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(15)),
                owner: String?, type: String, predicate: String, firesOn: [String], alert: String?, sink: Sink,
                target: String?, secret: String?) {
        self.id = id
        self.owner = owner
        self.type = type
        self.predicate = predicate
        self.firesOn = firesOn
        self.alert = alert
        self.sink = sink
        self.target = target
        self.secret = secret
    }

    public var json: JSONValue {
        var o: [String: JSONValue] = ["id": .string(id), "type": .string(type), "predicate": .string(predicate),
                                      "fires_on": .array(firesOn.map(JSONValue.string)), "sink": .string(sink.rawValue)]
        o["owner"] = owner.map(JSONValue.string) ?? .null
        o["alert"] = alert.map(JSONValue.string) ?? .null
        o["target"] = target.map(JSONValue.string) ?? .null
        return .object(o)
    }
}

extension Subscription {
    /// The event a subscriber receives; `event_id` is stable across redeliveries.
    public func event(seq: Int64, op: String, type: String, at: Double, record: JSONValue) -> JSONValue {
        var o: [String: JSONValue] = ["event_id": .string("\(id)-\(seq)"), "subscription": .string(id), "seq": .int(seq),
                                      "op": .string(op), "type": .string(type), "time": .string(isoTimestamp(at)), "record": record]
        if let alert = alert { o["alert"] = .string(Self.render(alert, record: record)) }
        return .object(o)
    }

    /// An alert template is at most this long (checked at `subscribe`).
    public static let maxAlertTemplateBytes = 1024
    /// A rendered alert is at most this long, cut at a character with `…` after it: a
    /// template of 1,000 `{memo}` and a 1 MiB memo once made 1 GB per event.
    public static let maxAlertBytes = 4096

    /// `"A new {type} was added: {memo}"`: built-in keys and fields by name, in one pass
    /// (a value that itself holds `{memo}` is text, not a placeholder), stopping at
    /// `maxAlertBytes`.
    static func render(_ template: String, record: JSONValue) -> String {
        let fields = record["fields"]?.objectValue ?? [:]
        func value(_ key: Substring) -> String? {
            let v: JSONValue? = switch key {
            case "type", "memo", "id": fields[String(key)] ?? record[String(key)] ?? ""
            default: fields[String(key)]
            }
            return v.map { $0.stringValue ?? $0.jsonString }
        }
        var out = ""
        var rest = template[...]
        while !rest.isEmpty, out.utf8.count <= maxAlertBytes {
            if rest.first == "{", let close = rest.firstIndex(of: "}"),
               let v = value(rest[rest.index(after: rest.startIndex)..<close]) {
                out += v.utf8.count > maxAlertBytes ? String(v.prefix(maxAlertBytes)) : v
                rest = rest[rest.index(after: close)...]
            } else {
                out.append(rest.removeFirst())
            }
        }
        guard out.utf8.count > maxAlertBytes else { return out }
        var cut = out.prefix(maxAlertBytes - 3)
        while cut.utf8.count > maxAlertBytes - 3 { cut = cut.dropLast() }
        return cut + "…"
    }
}

public struct OutboxDelivery: Sendable {
    public let id: Int64
    public let subscription: Subscription
    public let seq: Int64
    public let attempts: Int
    public let event: JSONValue

    public init(id: Int64, subscription: Subscription, seq: Int64, attempts: Int, event: JSONValue) {
        (self.id, self.subscription, self.seq, self.attempts, self.event) = (id, subscription, seq, attempts, event)
    }
}
