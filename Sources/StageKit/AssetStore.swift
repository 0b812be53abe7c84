import Glibc

/// Where assets live: the content-addressed local folder, or an S3-compatible bucket.
/// Keys are content addresses (`sha256/ab/cd/abcd…`), so the same bytes are stored once
/// and a repeated put is a no-op. Methods block: call them off the loop (stages do).
public protocol AssetStore: Sendable {
    /// The store as the job definition names it (`file:store`, `s3://bucket/prefix`).
    var name: String { get }
    /// Stores the open file `source` (read from its start; `name` names it in messages)
    /// under `key` unless an object of that size is already there. Returns true when it
    /// uploaded, false when the object existed. `fresh`: the bytes are new to the store as
    /// far as the caller knows (a job's first attempt), so a remote store sends them
    /// without asking first; storing the same bytes again is harmless, since the key is
    /// their hash. `releasing`: the caller removes the file once stored, so a store on its
    /// filesystem may take it by a hard link instead of a copy (the bytes are never
    /// copied). The store checks the bytes against `sha256` (it is the last gate before a
    /// content address) unless the file it links holds `seal` (`PhotoSeal`: intake hashed
    /// these very bytes). A descriptor, not a path: a photo is read from the file a stage
    /// opened and checked (`PhotoFile`), never reopened by name.
    @discardableResult
    func put(_ source: Int32, name: String, key: String, sha256: String, contentType: String, metadata: [String: String],
             fresh: Bool, releasing: Bool, seal: String?) throws -> Bool
    func get(key: String, to file: String) throws
    /// Up to `count` bytes of the object from `offset` (fewer only at its end), so a
    /// reader streams an object without holding all of it.
    func read(key: String, offset: Int64, count: Int) throws -> [UInt8]
    /// Size of the object, or nil when there is none.
    func head(key: String) throws -> Int64?
    func delete(key: String) throws
    func list(prefix: String) throws -> [String]
}

extension AssetStore {
    /// The file at `path` (a rendition the daemon wrote; never a link), as `put(_:name:…)`.
    @discardableResult
    public func put(file path: String, key: String, sha256: String, contentType: String, metadata: [String: String],
                    fresh: Bool = false, releasing: Bool = false, seal: String? = nil) throws -> Bool {
        let fd: Int32
        do { fd = try syscall("open \(path)", blocking: { open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }) } catch {
            throw StoreFailure(.permanent, "cannot read \(error)")
        }
        defer { close(fd) }
        return try put(fd, name: path, key: key, sha256: sha256, contentType: contentType, metadata: metadata, fresh: fresh,
                       releasing: releasing, seal: seal)
    }

    /// `sha256/ab/cd/<hex>`: spreads objects over folders (local) and prefixes (S3).
    public static func key(sha256 hex: String) -> String {
        let h = Array(hex)
        return "sha256/\(String(h[0..<2]))/\(String(h[2..<4]))/\(hex)"
    }
}

/// Why a store operation failed, as the scheduler needs it: an outage waits without
/// spending attempts, a transient error retries, a permanent one fails the job.
public struct StoreFailure: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable { case unavailable, transient, permanent }
    public let kind: Kind
    public let message: String
    /// Set where the cause is known (an errno, an HTTP status), e.g. `.noSpace` for a
    /// write the store's filesystem refused for room.
    public let code: PhotomemoError.Code?

    public init(_ kind: Kind, _ message: String, code: PhotomemoError.Code? = nil) {
        self.kind = kind
        self.message = message
        self.code = code
    }

    public var description: String { message }
}
