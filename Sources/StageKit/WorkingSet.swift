/// What a job carries from stage to stage, typed, so no stage reads another's result by
/// name: the job's files (the original and its renditions), and the facts its record gets
/// (EXIF; what a stage adds). The memo is `JobContext.memo`.
///
/// Each stage reads what the stages before it left (`JobContext.working`) and changes it
/// with `JobContext.update`; what it leaves is journalled with its `.continue` (a crash
/// between stages resumes with the same set; a run that retries, fails or waits keeps
/// none of its changes). `results` stays the per-stage history `photomemo job ID` shows.
public struct WorkingSet: Sendable, Equatable {
    /// What a file is to the job.
    public enum Role: Sendable, Hashable, CustomStringConvertible {
        /// The photo as taken.
        case original
        /// A file made from it (`compress`'s renditions by their definition names).
        case rendition(String)

        /// "original" or the rendition's name: its name in a record's `assets`.
        public var description: String {
            switch self {
            case .original: "original"
            case .rendition(let name): name
            }
        }
    }

    public struct File: Sendable, Equatable {
        public var role: Role
        public var path: String
        /// SHA-256 (hex) of the bytes at `path`: what a store checks and keys them by.
        public var sha256: String?
        public var bytes: Int64?
        public var width: Int?
        public var height: Int?
        /// jpeg, png, webp, heic, ...
        public var format: String?
        /// Its key in the asset store once a stage stored it.
        public var storedKey: String?

        public init(role: Role, path: String, sha256: String? = nil, bytes: Int64? = nil, width: Int? = nil, height: Int? = nil,
                    format: String? = nil, storedKey: String? = nil) {
            self.role = role
            self.path = path
            self.sha256 = sha256
            self.bytes = bytes
            self.width = width
            self.height = height
            self.format = format
            self.storedKey = storedKey
        }
    }

    /// In the order they were added: the original first when the job has a photo.
    public private(set) var files: [File]
    /// The photo's EXIF as the record stores it (null: not read).
    public var exif: JSONValue?
    /// What stages add to the record by name (text, labels): the record's facts. The index
    /// writes each as a typed field of the record where no memo gave that field
    /// (`RecordInput.annotations`). Set with `annotate`, which checks them.
    public private(set) var annotations: [String: JSONValue]

    public init(files: [File] = [], exif: JSONValue? = nil, annotations: [String: JSONValue] = [:]) {
        self.files = files
        self.exif = exif
        self.annotations = annotations
    }

    /// A new job's set: its photo as the original, if it has one.
    public init(photoPath: String?, sha256: String?) {
        self.init(files: photoPath.map { [File(role: .original, path: $0, sha256: sha256)] } ?? [])
    }

    public subscript(role: Role) -> File? { files.first { $0.role == role } }

    public var original: File? { self[.original] }
    public var renditions: [File] { files.filter { $0.role != .original } }

    /// Adds `file`, or replaces the file of its role (a stage that rewrites a rendition
    /// gives its new path and hash; the store then stores those).
    public mutating func put(_ file: File) {
        if let i = files.firstIndex(where: { $0.role == file.role }) { files[i] = file } else { files.append(file) }
    }

    /// Adds a fact the record gets as its field `name` (replacing an earlier stage's of
    /// that name). The value follows a job line's field rules (`MemoJob.checkAnnotation`):
    /// a string, number, bool, date string or list of strings. Throws `badJob` otherwise.
    public mutating func annotate(_ name: String, _ value: JSONValue) throws {
        try MemoJob.checkAnnotation(name, value)
        annotations[name] = value
    }

    /// Changes the file of `role`, if there is one.
    public mutating func change(_ role: Role, _ body: (inout File) -> Void) {
        guard let i = files.firstIndex(where: { $0.role == role }) else { return }
        body(&files[i])
    }
}

extension WorkingSet {
    /// As the journal keeps it (`jobs.working_set`) and the exec stage hands it on.
    public var json: JSONValue {
        var o: [String: JSONValue] = ["files": .array(files.map(\.json))]
        if let exif { o["exif"] = exif }
        if !annotations.isEmpty { o["annotations"] = .object(annotations) }
        return .object(o)
    }

    public init(json: JSONValue) throws {
        guard let files = json["files"]?.arrayValue else { throw PhotomemoError(.internalError, "working set without files: \(json.jsonString)") }
        self.init(files: try files.map(File.init(json:)), exif: json["exif"], annotations: json["annotations"]?.objectValue ?? [:])
    }
}

extension WorkingSet.File {
    var json: JSONValue {
        var o: [String: JSONValue] = ["role": .string(role == .original ? "original" : "rendition"), "path": .string(path)]
        if case .rendition(let name) = role { o["name"] = .string(name) }
        if let sha256 { o["sha256"] = .string(sha256) }
        if let bytes { o["bytes"] = .int(bytes) }
        if let width { o["width"] = .int(Int64(width)) }
        if let height { o["height"] = .int(Int64(height)) }
        if let format { o["format"] = .string(format) }
        if let storedKey { o["stored_key"] = .string(storedKey) }
        return .object(o)
    }

    init(json: JSONValue) throws {
        guard let path = json["path"]?.stringValue else { throw PhotomemoError(.internalError, "working set file without a path: \(json.jsonString)") }
        let role: WorkingSet.Role
        switch (json["role"]?.stringValue, json["name"]?.stringValue) {
        case ("original", _): role = .original
        case ("rendition", let name?): role = .rendition(name)
        default: throw PhotomemoError(.internalError, "working set file without a role: \(json.jsonString)")
        }
        self.init(role: role, path: path, sha256: json["sha256"]?.stringValue, bytes: json["bytes"]?.intValue,
                  width: json["width"]?.intValue.map(Int.init), height: json["height"]?.intValue.map(Int.init),
                  format: json["format"]?.stringValue, storedKey: json["stored_key"]?.stringValue)
    }
}

extension WorkingSet {
    /// The set of a job journalled before there were working sets (its `working_set` is
    /// NULL), read back from the results of the stages it ran then: validate's and
    /// compress's original, compress's renditions and EXIF, upload's stored keys. Only for
    /// jobs that were between stages at the upgrade; the one place these names are read.
    public init(upgrading results: [String: JSONValue], photoPath: String?, sha256: String?) {
        self.init(photoPath: photoPath, sha256: sha256)
        guard !results.isEmpty else { return }
        let compress = results["compress"], stored = results["upload"]?["assets"]
        for original in [results["validate"], compress?["original"]].compactMap({ $0 }) {
            change(.original) { f in
                f.format = original["format"]?.stringValue ?? f.format
                f.width = original["width"]?.intValue.map(Int.init) ?? f.width
                f.height = original["height"]?.intValue.map(Int.init) ?? f.height
                f.bytes = original["bytes"]?.intValue ?? f.bytes
            }
        }
        for (name, r) in (compress?["renditions"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let path = r["path"]?.stringValue else { continue }
            put(File(role: .rendition(name), path: path, sha256: r["sha256"]?.stringValue, bytes: r["bytes"]?.intValue,
                     width: r["width"]?.intValue.map(Int.init), height: r["height"]?.intValue.map(Int.init), format: r["format"]?.stringValue))
        }
        exif = compress?["exif"]
        for (name, asset) in stored?.objectValue ?? [:] {
            let role: Role = name == "original" ? .original : .rendition(name)
            change(role) { f in
                f.storedKey = asset["key"]?.stringValue
                f.bytes = asset["bytes"]?.intValue ?? f.bytes
                if role == .original { f.format = asset["format"]?.stringValue ?? f.format }
            }
        }
    }
}
