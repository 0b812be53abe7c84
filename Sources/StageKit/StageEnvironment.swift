import Foundation

/// What a stage sees of the daemon it runs in: the home, and the daemon's shared
/// resources — the job definition's `database` and `store` (or `serve --database` /
/// `--store`) — opened once by the runtime. A stage that names its own (`index`, `store`
/// options) gets that one for itself; the same spec twice is the same open resource.
public struct StageEnvironment: Sendable {
    public let home: URL
    /// `sqlite:FILE` (relative to the home).
    public let database: String
    /// `file:DIR` (relative to the home) or `s3://BUCKET[/PREFIX]?endpoint=URL&region=R`.
    public let store: String
    /// The definition's own `store` as written (`store` unless `serve --store` overrides it).
    public let writtenStore: String
    public let resources: ResourcePool
    /// The job definition's `"inbox"` section (what becomes of originals once stored).
    public let inbox: InboxOptions

    public static let defaultDatabase = "sqlite:photomemo.sqlite"
    public static let defaultStore = "file:store"

    public init(home: URL, database: String = defaultDatabase, store: String = defaultStore, writtenStore: String? = nil,
                resources: ResourcePool = ResourcePool(), inbox: InboxOptions = InboxOptions()) {
        self.home = home
        self.inbox = inbox
        self.database = database
        self.store = store
        self.writtenStore = writtenStore ?? store
        self.resources = resources
    }

    /// A path in a spec (`sqlite:FILE`, `file:DIR`), resolved against the home.
    public func path(_ relativeOrAbsolute: String) -> String {
        relativeOrAbsolute.hasPrefix("/") ? relativeOrAbsolute : home.appendingPathComponent(relativeOrAbsolute).path
    }
}

/// The resources of one daemon, each opened once by key and shared by whoever asks for
/// the same key (the index stage, the notify stage and the socket share one record index).
/// One pool per daemon, owned by the runtime: no process-wide registry.
public final class ResourcePool: @unchecked Sendable {
    // Safe: `open` is only touched with `lock` held.
    private let lock = NSLock()
    private var open: [String: any Sendable] = [:]

    public init() {}

    public func shared<T: Sendable>(_ key: String, _ make: () throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        if let existing = open[key] {
            guard let typed = existing as? T else { throw PhotomemoError(.badDefinition, "\(key) is already open as another kind of resource") }
            return typed
        }
        let made = try make()
        open[key] = made
        return made
    }
}
