import Foundation

/// A loaded, validated job definition (`Jobs/*.json`): its stages in order, each already
/// constructed with checked options, plus retry policy and join timeout.
public struct JobDefinition: Sendable {
    public struct StageEntry: Sendable {
        public let name: String
        public let stage: any Stage
        public let concurrency: Int
    }

    public let name: String
    public let stages: [StageEntry]
    public let retry: RetryPolicy
    /// How long a memo line waits for its photo to arrive.
    public let joinTimeoutSeconds: Int
    /// Where it was loaded from (a path, or "built-in").
    public let source: String
    /// Where the journal, records, subscriptions and outbox live, and the asset store
    /// (DESIGN.md, "Scaling past one machine"): opened once by the runtime.
    public let database: String
    public let store: String
    public let inbox: InboxOptions
    /// Per-user limits (`Quota`); none by default.
    public var quota = Quota()
    /// The decode memory budget (`DecodeMemory`), in MB; nil: its default.
    public var memoryMB: Int?
    /// How long finished jobs and quarantine files are kept (`Retention`).
    public var retention = Retention()
    /// `"trash"`: how long a deleted record stays in the trash before it is purged (default
    /// 30 days); 0 (`"0"`, `"0s"`...) turns the trash off: `delete` purges at once, as before it.
    public var trashSeconds: Double = 30 * 86400
    /// The index after its last photo-local stage (`Stage.photoLocal`; 0 if none): a job at
    /// a stage before it is claimed only by the host that took its photo, later ones by any.
    public let photoLocalEnd: Int
    /// The first stage that can do without the photo's file (at most `photoLocalEnd`): the
    /// first that stores assets (`Stage.storesAssets`) finds the original in the store when
    /// an earlier run stored it and released the file (killed before its outcome was
    /// written, that run's job may fail with its photo gone). A retried job before it
    /// needs its photo back.
    public let photoNeededEnd: Int
    /// The first stage that reads the memo (`Stage.readsMemo`; the stage count if none): a
    /// memo joins its photo's job only while the job is before it.
    public let memoStage: Int
    /// The first stage that writes records (`Stage.writesRecords`; the stage count if
    /// none): a job past it has its record.
    public let recordStage: Int

    public init(name: String, stages: [StageEntry], retry: RetryPolicy, joinTimeoutSeconds: Int, source: String,
                database: String, store: String, inbox: InboxOptions) {
        self.name = name
        self.stages = stages
        self.retry = retry
        self.joinTimeoutSeconds = joinTimeoutSeconds
        self.source = source
        self.database = database
        self.store = store
        self.inbox = inbox
        photoLocalEnd = (stages.lastIndex { type(of: $0.stage).photoLocal } ?? -1) + 1
        photoNeededEnd = min(photoLocalEnd, stages.firstIndex { type(of: $0.stage).storesAssets } ?? photoLocalEnd)
        memoStage = stages.firstIndex { type(of: $0.stage).readsMemo } ?? stages.count
        recordStage = stages.firstIndex { type(of: $0.stage).writesRecords } ?? stages.count
    }

    static let topKeys = ["name", "stages", "retry", "join_timeout_s", "database", "store", "inbox", "quota", "memory_mb", "retention", "trash"]
    static let stageKeys = ["use", "with", "concurrency"]
    static let retryKeys = ["max_attempts", "base_ms", "max_ms"]

    public func index(ofStage name: String) -> Int? { stages.firstIndex { $0.name == name } }

    /// The smallest `max_bytes` of its stages (validate's, compress's): a bigger photo can
    /// never get through, so intake refuses it unread.
    public var maxPhotoBytes: Int64? { stages.compactMap(\.stage.maxPhotoBytes).min() }

    public static func load(file path: String, registry: StageRegistry, environment: StageEnvironment,
                            database: String? = nil, store: String? = nil) throws -> JobDefinition {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw PhotomemoError(.badDefinition, "\(path): cannot read the file")
        }
        return try load(data: data, source: path, registry: registry, environment: environment, database: database, store: store)
    }

    /// `database` and `store`, when given (`serve --database`/`--store`), override the
    /// definition's; the stages are built with the result in their environment.
    public static func load(data: Data, source: String, registry: StageRegistry, environment: StageEnvironment,
                            database: String? = nil, store: String? = nil) throws -> JobDefinition {
        let root: JSONValue
        do { root = try JSONValue.parse(data) } catch let e as PhotomemoError {
            throw PhotomemoError(.badDefinition, "\(source): \(e.message)")
        }
        guard case .object(let o) = root else {
            throw PhotomemoError(.badDefinition, "\(source): a job definition must be a JSON object")
        }
        try checkKeys(o, allowed: topKeys, place: source)
        guard let name = o["name"]?.stringValue, !name.isEmpty else {
            throw PhotomemoError(.badDefinition, "\(source): \"name\" (a string) is required")
        }
        guard let rawStages = o["stages"]?.arrayValue, !rawStages.isEmpty else {
            throw PhotomemoError(.badDefinition, "\(source): \"stages\" must be a non-empty array")
        }
        func resource(_ key: String, _ override: String?, _ fallback: String) throws -> String {
            if let override { return override }
            guard let v = o[key] else { return fallback }
            guard let s = v.stringValue, !s.isEmpty else { throw PhotomemoError(.badDefinition, "\(source): \"\(key)\" must be a string") }
            return s
        }
        let database = try resource("database", database, environment.database)
        let store = try resource("store", store, environment.store)
        let inbox = try originals(in: rawStages, registry: registry, inbox: try InboxOptions.parse(o["inbox"], place: source), place: source)
        let environment = StageEnvironment(home: environment.home, database: database, store: store,
                                           writtenStore: try resource("store", nil, environment.store), resources: environment.resources,
                                           inbox: inbox)
        var entries: [StageEntry] = []
        for (i, raw) in rawStages.enumerated() {
            let place = "\(source): stages[\(i)]"
            guard case .object(let s) = raw else { throw PhotomemoError(.badDefinition, "\(place) must be an object") }
            try checkKeys(s, allowed: stageKeys, place: place)
            guard let use = s["use"]?.stringValue else {
                throw PhotomemoError(.badDefinition, "\(place): \"use\" (a stage name) is required")
            }
            guard let type = registry[use] else {
                throw PhotomemoError(.badDefinition,
                    "\(place): unknown stage \"\(use)\"; valid stages: \(registry.names.joined(separator: ", "))")
            }
            guard !entries.contains(where: { $0.name == use }) else {
                throw PhotomemoError(.badDefinition, "\(place): stage \"\(use)\" appears twice")
            }
            let with = s["with"] ?? .emptyObject
            guard case .object(let given) = with else {
                throw PhotomemoError(.badDefinition, "\(place): \"with\" must be an object")
            }
            let opts = try StageOptions(validating: given, against: type.options, place: "\(place) (\(use))")
            var concurrency = type.workload.defaultConcurrency
            if let c = s["concurrency"] {
                guard let n = c.intValue, n >= 1, n <= 1024 else {
                    throw PhotomemoError(.badDefinition, "\(place): \"concurrency\" must be an integer from 1 to 1024")
                }
                concurrency = Int(n)
            }
            let stage: any Stage
            do { stage = try type.init(options: opts, environment: environment) } catch let e as PhotomemoError {
                throw PhotomemoError(.badDefinition, "\(place) (\(use)): \(e.message)")
            }
            entries.append(StageEntry(name: use, stage: stage, concurrency: concurrency))
        }
        for (i, entry) in entries.enumerated() {
            do { try entry.stage.check(alongside: entries.map(\.stage)) } catch let e as PhotomemoError {
                throw PhotomemoError(.badDefinition, "\(source): job \"\(name)\": stages[\(i)] (\(entry.name)): \(e.message)")
            }
        }
        var retry = RetryPolicy.default
        if let r = o["retry"] {
            guard case .object(let ro) = r else { throw PhotomemoError(.badDefinition, "\(source): \"retry\" must be an object") }
            try checkKeys(ro, allowed: retryKeys, place: "\(source): retry")
            func positive(_ k: String) throws -> Int? {
                guard let v = ro[k] else { return nil }
                guard let n = v.intValue, n >= 1 else {
                    throw PhotomemoError(.badDefinition, "\(source): retry.\(k) must be a positive integer")
                }
                return Int(n)
            }
            retry.maxAttempts = try positive("max_attempts") ?? retry.maxAttempts
            retry.baseMs = try positive("base_ms") ?? retry.baseMs
            retry.maxMs = try positive("max_ms") ?? retry.maxMs
        }
        var join = 600
        if let j = o["join_timeout_s"] {
            guard let n = j.intValue, n >= 0 else {
                throw PhotomemoError(.badDefinition, "\(source): \"join_timeout_s\" must be a non-negative integer")
            }
            join = Int(n)
        }
        var definition = JobDefinition(name: name, stages: entries, retry: retry, joinTimeoutSeconds: join, source: source,
                                       database: database, store: store, inbox: inbox)
        definition.quota = try Quota.parse(o["quota"], place: source)
        definition.retention = try Retention.parse(o["retention"], place: source)
        if let t = o["trash"] { definition.trashSeconds = try DurationText.parse(t, key: "trash", place: source) }
        if let m = o["memory_mb"] {
            guard let n = m.intValue, n > 0, n <= 1 << 30 else {
                throw PhotomemoError(.badDefinition, "\(source): \"memory_mb\" must be a positive integer (megabytes), not \(m.jsonString)")
            }
            definition.memoryMB = Int(n)
        }
        return definition
    }

    /// `inbox` with `originals` read from a stage's old name for it (`keep_originals`) when
    /// the section has none; both given and different is an error, as is a bad value.
    static func originals(in rawStages: [JSONValue], registry: StageRegistry, inbox: InboxOptions, place: String) throws -> InboxOptions {
        var inbox = inbox
        for (i, raw) in rawStages.enumerated() {
            guard let use = raw["use"]?.stringValue, let alias = registry[use]?.originalsAlias, let given = raw["with"]?[alias] else { continue }
            let key = "\(place): stages[\(i)] (\(use)): \(alias)"
            let mode = try InboxOptions.Originals.parse(given, key: key)
            if let set = inbox.originals, set != mode {
                throw PhotomemoError(.badDefinition,
                    "\(key) is \"\(mode.rawValue)\" but inbox.originals is \"\(set.rawValue)\": \(alias) is the old name of inbox.originals; give one of them")
            }
            inbox.originals = mode
        }
        return inbox
    }

    static func checkKeys(_ o: [String: JSONValue], allowed: [String], place: String) throws {
        if let bad = o.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw PhotomemoError(.badDefinition,
                "\(place): unknown key \"\(bad)\"; valid keys: \(allowed.joined(separator: ", "))")
        }
    }

    /// `Jobs/photo-memo.json`, compiled in so an installed binary works without the repo.
    /// A test keeps the two identical.
    public static let builtinDefaultJSON = """
    { "name": "photo-memo",
      "database": "sqlite:photomemo.sqlite",
      "store": "file:store",
      "stages": [
        {"use": "validate", "with": {"formats": ["jpeg","png","heic","webp","avif"], "max_bytes": 52428800, "max_pixels": 100000000,
                                 "scan_data": false}},
        {"use": "compress", "with": {"renditions": [
            {"name": "display",   "width": 860,         "format": "jpeg", "quality": 90},
            {"name": "thumbnail", "fill": [200, 200],   "format": "jpeg", "quality": 70}],
          "strip_gps": true}},
        {"use": "upload",   "with": {}},
        {"use": "index",    "with": {}},
        {"use": "notify",   "with": {}}
      ],
      "retry": {"max_attempts": 6, "base_ms": 500, "max_ms": 60000} }

    """
}
