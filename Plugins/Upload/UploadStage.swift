import Foundation
import PhotomemoCore
import StageKit
import Stores

/// `upload`: puts the original and every rendition into the asset store under content
/// addresses and notes each one's key in the job's working set, for the record. After the original is durably stored, the
/// inbox file is removed, moved to `HOME/done/` or kept, as the definition's
/// `"inbox": {"originals"}` says (`keep_originals` here is its old name).
///
/// Idempotent: a key already stored is skipped (HEAD / size check), and a re-run after
/// the local files are gone (a crash after cleanup) finds them in the store by hash.
public struct UploadStage: Stage {
    public static let name = "upload"
    public static let summary = "stores the original and the renditions (content-addressed) in file: or s3:// stores"
    public static let workload = StageWorkload.io
    public static let photoLocal = true
    public static let readsMemo = false
    public static let storesAssets = true
    public static let options: [StageOption] = [
        StageOption("store", .string,
                    "the job definition's \"store\" (the default; no other: records, asset, verify, backup and reprocess read that one)"),
        StageOption("keep_originals", .string,
                    "the old name of the job definition's \"inbox\": {\"originals\"}: delete (the default), move (to HOME/done/) or keep"),
    ]
    public static let originalsAlias: String? = "keep_originals"

    let store: any AssetStore
    let inbox: String
    let done: String
    let renditionsRoot: String
    /// Where `photomemo reprocess` copies a record's original out of the store for its job.
    let reprocessRoot: String
    let keepOriginals: InboxOptions.Originals

    public init(options: StageOptions, environment: StageEnvironment) throws {
        // Every reader of assets (the socket's `asset`, verify, backup and restore, reprocess,
        // the collector) goes to the definition's store: objects put elsewhere were records'
        // assets none of them found, backed up by nothing.
        // The definition's as written is the one `serve --store` stands in for.
        if let own = try options.string("store"),
           ![environment.store, environment.writtenStore].contains(where: { environment.storeIdentity(own) == environment.storeIdentity($0) }) {
            throw PhotomemoError(.badDefinition, "upload's \"store\" (\(own)) is not the definition's \"store\" (\(environment.writtenStore)): "
                                 + "records, asset, verify, backup and reprocess read the definition's; set \"store\" at its top instead")
        }
        store = try environment.assetStore()
        // A definition folds `keep_originals` into its inbox section (refusing both
        // differing); a stage built alone goes by its own option.
        let own = try options.string("keep_originals").map { try InboxOptions.Originals.parse(.string($0), key: "\"keep_originals\"") }
        keepOriginals = environment.inbox.originals ?? own ?? .delete
        inbox = environment.home.appendingPathComponent("inbox").path
        done = environment.home.appendingPathComponent("done").path
        renditionsRoot = environment.home.appendingPathComponent("renditions").path
        reprocessRoot = environment.home.appendingPathComponent("reprocess").path
    }

    static let contentTypes = ["jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp", "heic": "image/heic", "avif": "image/avif"]

    /// Stores the job's files as the working set has them (the original, and whatever
    /// renditions the stages before left, with their current hashes) and notes each one's
    /// key there for the record.
    public func run(_ job: JobContext) -> StageOutcome {
        do {
            var assets: [String: JSONValue] = [:]
            let files = job.working.files.filter { $0.role != .original || job.photoPath != nil }
            // What to send: a rendition without a hash (none made yet) is skipped.
            var puts: [(file: WorkingSet.File, sha: String)] = []
            for file in files {
                if file.role == .original {
                    guard let photoSHA = job.photoSHA256 else { throw StoreFailure(.permanent, "photo has no recorded sha256, so its bytes cannot be checked", code: .badJob) }
                    puts.append((file, photoSHA))
                } else if let renditionSHA = file.sha256 {
                    puts.append((file, renditionSHA))
                }
            }
            // All at once: each put waits on its own fsyncs (or its request), and the store
            // takes them together (a local store's fsyncs are one disk queue's). Each object
            // is durable under its key when its put returns, so the original leaves the
            // inbox below only after every put has; a failed one fails the run, whose
            // re-run finds the others stored.
            let sent = try Concurrently.map(puts) { put in
                let name = put.file.role.description, original = put.file.role == .original
                // A photo that leaves the inbox once stored may become the store's object itself.
                let path = original ? job.photoPath! : put.file.path
                let releasing = original ? path.hasPrefix(inbox + "/") && keepOriginals == .delete : path.hasPrefix(renditionsRoot + "/")
                return try send(path, sha: put.sha, type: Self.contentTypes[put.file.format ?? "jpeg"] ?? "application/octet-stream",
                                job: job, rendition: name, releasing: releasing, original: original)
            }
            for ((file, sha), (var asset, _)) in zip(puts, sent) {
                let name = file.role.description, original = file.role == .original
                asset["format"] = original ? .string(file.format ?? "jpeg") : file.format.map(JSONValue.string) ?? .null
                asset["width"] = file.width.map { .int(Int64($0)) } ?? .null
                asset["height"] = file.height.map { .int(Int64($0)) } ?? .null
                assets[name] = .object(asset)
                job.update { $0.change(file.role) { f in
                    (f.storedKey, f.bytes, f.sha256) = (asset["key"]?.stringValue, asset["bytes"]?.intValue, sha)
                    if original { f.format = file.format ?? "jpeg" }
                } }
                job.progress(Double(assets.count) / Double(files.count), name)
            }
            // Everything is durably stored: the local copies may go.
            if let photo = job.photoPath, photo.hasPrefix(inbox + "/"), let stored = sent.lazy.compactMap(\.storedFrom).first {
                Failpoint.hit("upload.before_release")
                try releaseOriginal(photo, identity: stored)
            }
            if let photo = job.photoPath, photo.hasPrefix(reprocessRoot + "/") { unlink(photo) }  // a copy of a stored original
            for file in files where file.role != .original && file.path.hasPrefix(renditionsRoot + "/") {
                unlink(file.path)
                // A job compressed before the flat layout had a folder of its own (`<h>/<key hash>/`).
                let folder = (file.path as NSString).deletingLastPathComponent
                if (folder as NSString).deletingLastPathComponent != renditionsRoot { rmdir(folder) }
            }
            return .continue(result: ["store": .string(store.name), "assets": .object(assets)])
        } catch {
            // Its own other errors (releasing the original) are transient: the photo is stored.
            return StageOutcome(catching: error, dependency: store.name, otherwise: { .retry(.of($0, or: .io), "\($0)") })
        }
    }

    /// Puts one file, or confirms it is already stored when the local file is gone.
    /// `releasing`: the local file is removed once stored (the store may link it in).
    /// `original`: the job's photo, opened and checked as every stage opens it (`PhotoFile`)
    /// and stored from that descriptor, with intake's seal; else a rendition compress wrote.
    /// The asset, and for the original read from its file, that file's identity (`PhotoSeal`).
    func send(_ path: String, sha: String, type: String, job: JobContext, rendition: String, releasing: Bool,
              original: Bool = false) throws -> (asset: [String: JSONValue], storedFrom: String?) {
        let key = LocalStore.key(sha256: sha)
        let metadata = ["job": String(job.id), "rendition": rendition]
        // A first run's bytes are new (intake found no job with the same photo); a re-run,
        // after a failure or an outage of the store, may find what an earlier one stored.
        let fresh = job.attempt == 1 && job.outages == 0
        let size: Int64
        var st = stat(), storedFrom: String?
        if original, let photo = try Self.open(job) {
            try store.put(photo.fd, name: path, key: key, sha256: sha, contentType: type, metadata: metadata, fresh: fresh,
                          releasing: releasing, seal: job.photoSeal)
            (size, storedFrom) = (Int64(photo.stat.st_size), PhotoSeal.identity(photo.stat))
        } else if !original, lstat(path, &st) == 0 {
            try store.put(file: path, key: key, sha256: sha, contentType: type, metadata: metadata, fresh: fresh, releasing: releasing)
            size = Int64(st.st_size)
        } else if let stored = try store.head(key: key) {
            size = stored  // a previous run stored it and cleaned up
        } else {
            throw StoreFailure(.permanent, "\(rendition) \(path) is gone and not in \(store.name)", code: original ? .photoGone : .notFound)
        }
        return (["key": .string(key), "bytes": .int(size), "sha256": .string(sha)], storedFrom)
    }

    /// The job's photo, or nil when it is gone (a previous run stored it and cleaned up).
    static func open(_ job: JobContext) throws -> PhotoFile? {
        do {
            return try PhotoFile(job, maxBytes: job.maxPhotoBytes ?? .max)
        } catch let e as PhotomemoError {
            switch e.code {
            case .photoGone: return nil
            case .io: throw StoreFailure(.transient, e.message, code: .io)
            default: throw StoreFailure(.permanent, e.message, code: e.code)
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
    /// anywhere); a folder is never removed, and nothing but the file stored (`identity`):
    /// a photo renamed over it, or written anew at its name, since it was opened is a drop
    /// of its own and stays.
    func releaseOriginal(_ photo: String, identity: String) throws {
        guard keepOriginals != .keep else { return }
        let relative = String(photo.dropFirst(inbox.count + 1))
        let held: (folder: OpenFolder, name: String)
        do { held = try OpenFolder(inbox, followLink: true).parentBeneath(relative) } catch let e as SystemError
            where [ENOENT, ENOTDIR, ELOOP, EXDEV].contains(e.errno) { return }  // nothing of this job's is there
        try keepOriginals.release(held.name, in: held.folder, as: relative, done: done, identity: identity)
    }
}
