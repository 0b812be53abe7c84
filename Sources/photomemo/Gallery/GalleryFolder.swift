import Foundation
import Glibc
import PhotomemoCore

/// The gallery folder on disk: what it holds, written so a browser or web server never
/// sees half a file, and the manifest that makes re-runs incremental.
///
///     DIR/index.html  DIR/style.css  DIR/r/<id>.html  DIR/assets/<sha256>.<ext>  DIR/.gallery.json
///
/// `r/` and `assets/` belong to the gallery: files there that the current run does not
/// use are deleted. So a folder that is neither empty nor an earlier gallery is refused.
struct GalleryFolder {
    let root: String
    var pages: String { root + "/r" }
    var assets: String { root + "/assets" }
    private var lock: Int32 = -1

    /// Fails unless DIR is new, empty, or an earlier gallery (before anything is fetched).
    static func check(_ dir: String) throws {
        let fm = FileManager.default
        var isDir: ObjCBool = false
        guard fm.fileExists(atPath: dir, isDirectory: &isDir) else { return }
        guard isDir.boolValue else { throw PhotomemoError(.badUsage, "\(dir) is a file, not a folder") }
        let entries = (try? fm.contentsOfDirectory(atPath: dir)) ?? []
        if !entries.isEmpty && !entries.contains(GalleryManifest.fileName) {
            throw PhotomemoError(.badUsage, "\(dir) is not empty and holds no gallery (\(GalleryManifest.fileName)); give an empty or new folder")
        }
    }

    /// Checks DIR, creates it (and r/, assets/), and takes its lock so two runs never
    /// write one folder at once.
    init(_ dir: String) throws {
        root = dir.count > 1 && dir.hasSuffix("/") ? String(dir.dropLast()) : dir
        try Self.check(root)
        let fm = FileManager.default
        do {
            for d in [root, pages, assets] { try fm.createDirectory(atPath: d, withIntermediateDirectories: true) }
        } catch {
            throw PhotomemoError(.io, "cannot create the gallery in \(root): \(error.localizedDescription)")
        }
        lock = open(root + "/.gallery.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard lock >= 0 else { throw PhotomemoError(.io, "cannot open \(root)/.gallery.lock: \(String(cString: strerror(errno)))") }
        if flock(lock, LOCK_EX | LOCK_NB) != 0 {
            close(lock)
            throw PhotomemoError(.io, "another photomemo gallery is writing \(root)")
        }
    }

    func release() { if lock >= 0 { close(lock) } }

    func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Writes `text` to `path` through a temp file and a rename, unless the file already
    /// holds exactly that. Returns whether it wrote.
    @discardableResult
    func write(_ text: String, to path: String) throws -> Bool {
        let data = Data(text.utf8)
        if let old = FileManager.default.contents(atPath: path), old == data { return false }
        let temp = (path as NSString).deletingLastPathComponent + "/." + (path as NSString).lastPathComponent + ".tmp-\(getpid())"
        guard FileManager.default.createFile(atPath: temp, contents: data, attributes: [.posixPermissions: 0o644]) else {
            throw PhotomemoError(.io, "cannot write \(temp): \(String(cString: strerror(errno)))")
        }
        guard rename(temp, path) == 0 else {
            let e = errno
            unlink(temp)
            throw PhotomemoError(.io, "cannot rename \(temp) to \(path): \(String(cString: strerror(e)))")
        }
        return true
    }

    /// Deletes the files in `folder` not named in `keep` (a download's hidden temp files
    /// included, once no run holds the lock). Returns the names deleted.
    func prune(_ folder: String, keep: Set<String>) throws -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var removed: [String] = []
        for name in names.sorted() where !keep.contains(name) {
            guard unlink(folder + "/" + name) == 0 || errno == ENOENT else {
                throw PhotomemoError(.io, "cannot remove \(folder)/\(name): \(String(cString: strerror(errno)))")
            }
            if !name.hasPrefix(".") { removed.append(name) }
        }
        return removed
    }
}
