import Foundation
import PhotomemoCore
import Stores

/// `upload`: puts the original and every rendition into the asset store under content
/// addresses and hands the keys to the index. After the original is durably stored, the
/// inbox file is removed, moved to `HOME/done/` or kept, as the definition's
/// `"inbox": {"originals"}` says (`keep_originals` here is its old name).
///
/// Idempotent: a key already stored is skipped (HEAD / size check), and a re-run after
/// the local files are gone (a crash after cleanup) finds them in the store by hash.
public struct UploadStage: Stage {
    public static let name = "upload"
    public static let summary = "stores the original and the renditions (content-addressed) in file: or s3:// stores"
    public static let workload = StageWorkload.io
    public static let options: [StageOption] = [
        StageOption("store", .string,
                    "file:DIR (relative to the home) or s3://BUCKET[/PREFIX]?endpoint=URL&region=R (credentials from AWS_* variables); default: the job definition's \"store\""),
        StageOption("keep_originals", .string,
                    "the old name of the job definition's \"inbox\": {\"originals\"}: delete (the default), move (to HOME/done/) or keep"),
    ]
    public static let originalsAlias: String? = "keep_originals"

    let store: any AssetStore
    let inbox: String
    let done: String
    let renditionsRoot: String
    let keepOriginals: InboxOptions.Originals

    public init(options: StageOptions, environment: StageEnvironment) throws {
        store = try environment.assetStore(options.string("store"))
        // A definition folds `keep_originals` into its inbox section (refusing both
        // differing); a stage built alone goes by its own option.
        let own = try options.string("keep_originals").map { try InboxOptions.Originals.parse(.string($0), key: "\"keep_originals\"") }
        keepOriginals = environment.inbox.originals ?? own ?? .delete
        inbox = environment.home.appendingPathComponent("inbox").path
        done = environment.home.appendingPathComponent("done").path
        renditionsRoot = environment.home.appendingPathComponent("renditions").path
    }

    static let contentTypes = ["jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp", "heic": "image/heic"]

    public func run(_ job: JobContext) -> StageOutcome {
        do {
            var assets: [String: JSONValue] = [:]
            let compress = job.results["compress"]
            let total = Double((job.photoPath == nil ? 0 : 1) + (compress?["renditions"]?.objectValue?.count ?? 0))
            if let photo = job.photoPath {
                let original = compress?["original"] ?? job.results["validate"] ?? .emptyObject
                let format = original["format"]?.stringValue ?? "jpeg"
                guard let sha = job.photoSHA256 else { throw StoreFailure(.permanent, "photo has no recorded sha256, so its bytes cannot be checked") }
                // A photo that leaves the inbox once stored may become the store's object itself.
                let released = photo.hasPrefix(inbox + "/") && keepOriginals == .delete
                var asset = try send(photo, sha: sha, type: Self.contentTypes[format] ?? "application/octet-stream",
                                     job: job, rendition: "original", releasing: released, original: true)
                asset["format"] = .string(format)
                asset["width"] = original["width"] ?? .null
                asset["height"] = original["height"] ?? .null
                assets["original"] = .object(asset)
                job.progress(Double(assets.count) / total, "original")
            }
            for (name, r) in compress?["renditions"]?.objectValue ?? [:] {
                guard let path = r["path"]?.stringValue, let sha = r["sha256"]?.stringValue else { continue }
                let format = r["format"]?.stringValue ?? "jpeg"
                var asset = try send(path, sha: sha, type: Self.contentTypes[format] ?? "application/octet-stream",
                                     job: job, rendition: name, releasing: path.hasPrefix(renditionsRoot + "/"))
                for k in ["width", "height", "format"] { asset[k] = r[k] ?? .null }
                assets[name] = .object(asset)
                job.progress(Double(assets.count) / total, name)
            }
            // Everything is durably stored: the local copies may go.
            if let photo = job.photoPath, photo.hasPrefix(inbox + "/") { try releaseOriginal(photo) }
            for r in (compress?["renditions"]?.objectValue ?? [:]).values {
                guard let p = r["path"]?.stringValue, p.hasPrefix(renditionsRoot + "/") else { continue }
                unlink(p)
                // A job compressed before the flat layout had a folder of its own (`<h>/<key hash>/`).
                let folder = (p as NSString).deletingLastPathComponent
                if (folder as NSString).deletingLastPathComponent != renditionsRoot { rmdir(folder) }
            }
            return .continue(result: ["store": .string(store.name), "assets": .object(assets)])
        } catch let f as StoreFailure {
            switch f.kind {
            case .unavailable: return .unavailable(dependency: store.name, reason: f.message)
            case .transient: return .retry(reason: f.message)
            case .permanent: return .fail(reason: f.message)
            }
        } catch {
            return .retry(reason: "\(error)")
        }
    }

    /// Puts one file, or confirms it is already stored when the local file is gone.
    /// `releasing`: the local file is removed once stored (the store may link it in).
    /// `original`: the job's photo, opened and checked as every stage opens it (`PhotoFile`)
    /// and stored from that descriptor, with intake's seal; else a rendition compress wrote.
    func send(_ path: String, sha: String, type: String, job: JobContext, rendition: String, releasing: Bool,
              original: Bool = false) throws -> [String: JSONValue] {
        let key = LocalStore.key(sha256: sha)
        let metadata = ["job": String(job.id), "rendition": rendition]
        // A first run's bytes are new (intake found no job with the same photo); a re-run,
        // after a failure or an outage of the store, may find what an earlier one stored.
        let fresh = job.attempt == 1 && job.outages == 0
        let size: Int64
        var st = stat()
        if original, let photo = try Self.open(job) {
            try store.put(photo.fd, name: path, key: key, sha256: sha, contentType: type, metadata: metadata, fresh: fresh,
                          releasing: releasing, seal: job.photoSeal)
            size = Int64(photo.stat.st_size)
        } else if !original, lstat(path, &st) == 0 {
            try store.put(file: path, key: key, sha256: sha, contentType: type, metadata: metadata, fresh: fresh, releasing: releasing)
            size = Int64(st.st_size)
        } else if let stored = try store.head(key: key) {
            size = stored  // a previous run stored it and cleaned up
        } else {
            throw StoreFailure(.permanent, "\(rendition) \(path) is gone and not in \(store.name)")
        }
        return ["key": .string(key), "bytes": .int(size), "sha256": .string(sha)]
    }

    /// The job's photo, or nil when it is gone (a previous run stored it and cleaned up).
    static func open(_ job: JobContext) throws -> PhotoFile? {
        do {
            return try PhotoFile(job, maxBytes: .max)
        } catch let e as PhotomemoError {
            switch e.code {
            case .notFound: return nil
            case .io: throw StoreFailure(.transient, e.message)
            default: throw StoreFailure(.permanent, e.message)
            }
        }
    }

    /// The photo leaves the inbox; its memo sidecar is left to intake, which releases it
    /// once the photo has gone and only if what it holds now is what a job read
    /// (`InboxScanner.lookAtSidecar`): a sidecar edited since its photo was taken is an
    /// update of the record first, never lost with the photo.
    ///
    /// The photo is reached in its folder, held open beneath the inbox with no link
    /// followed on the way (a nested photo's folder may have been swapped for a link to
    /// anywhere); a folder is never removed, whatever stands at the photo's name now.
    func releaseOriginal(_ photo: String) throws {
        guard keepOriginals != .keep else { return }
        let relative = String(photo.dropFirst(inbox.count + 1))
        let held: (folder: OpenFolder, name: String)
        do { held = try OpenFolder(inbox, followLink: true).parentBeneath(relative) } catch let e as SystemError
            where [ENOENT, ENOTDIR, ELOOP, EXDEV].contains(e.errno) { return }  // nothing of this job's is there
        guard let st = held.folder.entry(held.name), st.st_mode & S_IFMT != S_IFDIR else { return }
        try keepOriginals.release(held.name, in: held.folder, as: relative, done: done)
    }
}
