import Foundation
import Glibc
import PhotomemoCore
import StageKit

/// The gallery folder on disk: what it holds, written so a browser or web server never
/// sees half a file, and the manifest that makes re-runs incremental.
///
///     DIR/index.html  DIR/style.css  DIR/r/<id>.html  DIR/assets/<sha256>.<ext>  DIR/.gallery.json
///
/// `r/` and `assets/` belong to the gallery: files there that the current run does not
/// use are deleted. So a folder that is neither empty nor an earlier gallery is refused.
struct GalleryFolder {
    let root: String
    /// DIR, r/ and assets/, held open: every file is written, read and removed through
    /// these descriptors, never through a link (`OpenFolder`), so a gallery folder others
    /// can write into (or a forged manifest) cannot make a run write or delete elsewhere.
    let top: OpenFolder, pages: OpenFolder, assets: OpenFolder
    private let lock: Int32

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
    /// write one folder at once. DIR, r/, assets/ or the lock as a symlink is refused.
    init(_ dir: String) throws {
        root = dir.count > 1 && dir.hasSuffix("/") ? String(dir.dropLast()) : dir
        try Self.check(root)
        do {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        } catch {
            throw PhotomemoError(.io, "cannot create the gallery in \(root): \(error.localizedDescription)")
        }
        (top, pages, assets, lock) = try Self.io { [root] in
            let top = try OpenFolder(root)
            let lock = try top.open(".gallery.lock", O_RDWR | O_CREAT)
            var st = stat()
            guard fstat(lock, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
                close(lock)
                throw PhotomemoError(.io, "\(root)/.gallery.lock is not a regular file")
            }
            return (top, try top.subfolder("r", create: true), try top.subfolder("assets", create: true), lock)
        }
        if flock(lock, LOCK_EX | LOCK_NB) != 0 {
            close(lock)
            throw PhotomemoError(.io, "another photomemo gallery is writing \(root)")
        }
    }

    func release() { close(lock) }

    /// System errors as the CLI reports them (`io`, exit 1).
    static func io<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as SystemError { throw PhotomemoError(.io, e.description) }
    }

    func exists(_ name: String, in folder: OpenFolder) -> Bool { folder.entry(name) != nil }

    /// Writes `text` to `name` in `folder` through a temp file and a rename, unless the
    /// file already holds exactly that. Returns whether it wrote.
    @discardableResult
    func write(_ text: String, to name: String, in folder: OpenFolder) throws -> Bool {
        let data = Data(text.utf8)
        if let old = try? folder.contents(name), old.elementsEqual(data) { return false }
        try Self.io { try folder.write(data, to: name) }
        return true
    }

    /// Deletes the files in `folder` not named in `keep` (a download's hidden temp files
    /// included, once no run holds the lock). Returns the names deleted.
    func prune(_ folder: OpenFolder, keep: Set<String>) throws -> [String] {
        var removed: [String] = []
        for name in try Self.io({ try folder.names() }).sorted() where !keep.contains(name) {
            try Self.io { try folder.remove(name) }
            if !name.hasPrefix(".") { removed.append(name) }
        }
        return removed
    }
}
