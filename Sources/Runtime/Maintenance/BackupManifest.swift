import Foundation
import Glibc
import PhotomemoCore
import StageKit

/// `DIR/manifest.json` of a backup folder, written last: a folder without one is a backup
/// that did not finish. It lists every file with its size and sha256, every store object
/// by key and sha256 (copied into `DIR/store/`, or, for an S3 store, only named), and the
/// schema versions of the database copy, which `restore` checks before writing anything.
public struct BackupManifest: Sendable, Equatable {
    public static let fileName = "manifest.json"
    public static let format = "photomemo-backup"
    /// This manifest's own layout; a newer one is refused by an older `restore`.
    public static let version = 1

    public struct File: Sendable, Equatable {
        public var path: String
        public var bytes: Int64
        public var sha256: String
    }

    public struct Object: Sendable, Equatable {
        public var key: String
        public var sha256: String
        /// nil for an object only named (S3): its size is the store's.
        public var bytes: Int64?
        /// In `DIR/store/KEY` (a `file:` store), or only named (S3).
        public var copied: Bool
    }

    public var version = BackupManifest.version
    public var created: Double
    public var photomemo: String
    /// "sqlite" (`photomemo.sqlite`, journal and index in one file) or "postgres" (`database.pgdump`).
    public var engine: String
    /// "journal" and "record_index": the versions the database copy holds.
    public var schemas: [String: Int]
    /// The store the records' assets were in (`file:/…` or `s3://…`).
    public var store: String
    /// "job.json" when the daemon ran a definition file (copied), nil for the built-in one.
    public var jobDefinition: String?
    public var files: [File]
    public var objects: [Object]
    /// Store objects whose bytes no longer matched their key when backed up: left out
    /// (`photomemo verify --repair` re-makes a rendition).
    public var damaged: [String]
    /// Keys the records name that the store did not have.
    public var missing: [String]

    public var json: JSONValue {
        [
            "format": .string(Self.format), "version": .int(Int64(version)), "created": .string(isoTimestamp(created)),
            "photomemo": .string(photomemo), "engine": .string(engine),
            "schemas": .object(schemas.mapValues { .int(Int64($0)) }), "store": .string(store),
            "job_definition": jobDefinition.map(JSONValue.string) ?? .null,
            "files": .array(files.map { ["path": .string($0.path), "bytes": .int($0.bytes), "sha256": .string($0.sha256)] }),
            "objects": .array(objects.map {
                ["key": .string($0.key), "sha256": .string($0.sha256), "bytes": $0.bytes.map(JSONValue.int) ?? .null, "copied": .bool($0.copied)]
            }),
            "damaged": .array(damaged.map(JSONValue.string)), "missing": .array(missing.map(JSONValue.string)),
        ]
    }

    public init(created: Double, photomemo: String, engine: String, schemas: [String: Int], store: String, jobDefinition: String?,
                files: [File], objects: [Object], damaged: [String], missing: [String]) {
        (self.created, self.photomemo, self.engine, self.schemas, self.store) = (created, photomemo, engine, schemas, store)
        (self.jobDefinition, self.files, self.objects, self.damaged, self.missing) = (jobDefinition, files, objects, damaged, missing)
    }

    /// A manifest has a line per file and per store object: 256 MiB is over a million objects.
    static let maxBytes = 256 << 20

    /// The manifest in `dir`, read and checked for shape (not yet against the files).
    public init(folder dir: String) throws {
        let path = dir + "/" + Self.fileName
        func bad(_ what: String) -> PhotomemoError { PhotomemoError(.badBackup, "\(path): \(what)") }
        var st = stat()
        guard lstat(path, &st) == 0 else {
            throw PhotomemoError(.badBackup, Files.exists(dir)
                ? "\(dir) is not a complete backup: it has no \(Self.fileName) (written last, so a backup that was interrupted has none)"
                : "no backup folder \(dir)")
        }
        // Read whole, so only a regular file of a bounded size: a FIFO or a link to
        // /dev/zero would never end.
        guard st.st_mode & S_IFMT == S_IFREG else { throw bad("not a regular file (\(Files.kind(st)))") }
        guard st.st_size <= Self.maxBytes else { throw bad("\(st.st_size) bytes: a manifest has at most \(Self.maxBytes >> 20) MiB") }
        guard let data = FileManager.default.contents(atPath: path) else { throw bad("cannot be read") }
        guard let j = try? JSONValue.parse(data), j["format"]?.stringValue == Self.format else { throw bad("not a photomemo backup manifest") }
        guard let v = j["version"]?.intValue else { throw bad("no \"version\"") }
        guard v <= Self.version else {
            throw bad("manifest version \(v) is newer than this photomemo understands (\(Self.version)): restore with the photomemo that made it, or newer")
        }
        version = Int(v)
        created = 0
        photomemo = j["photomemo"]?.stringValue ?? "?"
        guard let engine = j["engine"]?.stringValue, ["sqlite", "postgres"].contains(engine) else { throw bad("\"engine\" must be sqlite or postgres") }
        self.engine = engine
        schemas = (j["schemas"]?.objectValue ?? [:]).compactMapValues { $0.intValue.map(Int.init) }
        guard schemas["journal"] != nil, schemas["record_index"] != nil else { throw bad("\"schemas\" needs journal and record_index versions") }
        store = j["store"]?.stringValue ?? ""
        jobDefinition = j["job_definition"]?.stringValue
        files = try (j["files"]?.arrayValue ?? []).map { f in
            guard let p = f["path"]?.stringValue, Self.isPlainName(p), let b = f["bytes"]?.intValue, let s = f["sha256"]?.stringValue else {
                throw bad("a file entry without a plain path, bytes and sha256")
            }
            return File(path: p, bytes: b, sha256: s)
        }
        objects = try (j["objects"]?.arrayValue ?? []).map { o in
            guard let k = o["key"]?.stringValue, Self.isObjectKey(k), let s = o["sha256"]?.stringValue else {
                throw bad("an object entry without a sha256/ab/cd/HEX key and its sha256")
            }
            return Object(key: k, sha256: s, bytes: o["bytes"]?.intValue, copied: o["copied"]?.boolValue ?? false)
        }
        damaged = (j["damaged"]?.arrayValue ?? []).compactMap(\.stringValue)
        missing = (j["missing"]?.arrayValue ?? []).compactMap(\.stringValue)
    }

    /// A file name in the folder itself: nothing a manifest names may point elsewhere.
    static func isPlainName(_ p: String) -> Bool { !p.isEmpty && !p.contains("/") && p != "." && p != ".." }

    /// `sha256/ab/cd/<64 hex>`, the content address (`AssetStore.key`): the only keys a
    /// manifest may name, so none walks out of the folder.
    static func isObjectKey(_ k: String) -> Bool {
        let parts = k.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "sha256", parts[3].count == 64,
              parts[3].allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else { return false }
        return parts[1] == parts[3].prefix(2) && parts[2] == parts[3].dropFirst(2).prefix(2)
    }
}
