import Foundation
import Glibc
import Journal
import PhotomemoCore
import StageKit

/// A walk of the inbox tree, or of one folder's subtree, that goes on where it stopped:
/// each `InboxScanner.step` looks at `inbox.entries_per_turn` entries at most, so a folder
/// of a million files never holds the intake lane (new drops are taken between turns).
/// Folders are opened beneath the inbox, no link followed (a symlinked folder is an entry
/// like any other, never walked into), down to `inbox.depth`; tool-state folders
/// (`PhotoPolicy.isToolStateFolder`) are not looked into.
final class InboxWalk: @unchecked Sendable {  // used by one lane turn at a time
    /// The folder walked ("": the whole inbox).
    let under: String
    /// Into its subfolders too; else that folder's files alone (a look again at files that
    /// had not settled: not a walk of the whole tree for one file).
    let deep: Bool
    /// The whole inbox tree: what it found is all there is.
    var isWhole: Bool { under.isEmpty && deep }
    /// Folders still to read, with their depth below the inbox.
    fileprivate var folders: [(relative: String, depth: Int)]
    /// The folder being read: held open, its listing read where the last turn stopped.
    fileprivate var current: (folder: OpenFolder, dir: OpaquePointer, relative: String, depth: Int)?
    fileprivate var root: OpenFolder?
    /// The folders this walk opened, by device and inode: one met again under another name
    /// (a bind mount of the inbox, or of a folder of it, inside it) is not walked twice —
    /// a loop would list the tree again at every level down to `inbox.depth`, and each
    /// photo in it would be taken again under each name.
    fileprivate var opened: Set<[UInt64]> = []
    private(set) var finished = false
    /// Set on the loop when its first turn is queued: a walk under way may have passed a
    /// place already, so only one not started yet stands for a new request.
    var started = false

    /// What the whole walk found, for the watcher to take in once it is finished.
    struct Found {
        var skipped = SkippedEntries(counting: true)
        var stale = StaleEntries(counting: true)
        /// Files not settled yet, by the folder holding them: looked at again (that folder,
        /// not deep) once they may have settled.
        var unsettled: [String: Set<String>] = [:]
        var untaken = 0
        var atCap: Set<String> = []
        var overQuota: Set<String> = []
    }
    fileprivate(set) var found = Found()

    init(under: String, deep: Bool = true) {
        self.under = under
        self.deep = deep
        folders = [(under, under.isEmpty ? 0 : under.split(separator: "/").count)]
    }

    deinit { if let current { closedir(current.dir) } }

    /// The folder holding an inbox name ("" for the top).
    static func folder(of name: String) -> String {
        name.lastIndex(of: "/").map { String(name[..<$0]) } ?? ""
    }

    fileprivate func finish() {
        if let current { closedir(current.dir) }
        current = nil
        folders = []
        root = nil
        finished = true
    }
}

extension InboxScanner {
    /// One turn of `walk`: up to `entries_per_turn` entries looked at, photos among them
    /// taken (once settled), and the walk left where it stopped.
    func step(_ walk: InboxWalk) -> Report {
        var report = Report()
        let options = self.options.value
        guard !walk.finished else { return report }
        if walk.root == nil { walk.root = openInbox(&report) }
        guard let root = walk.root else {
            walk.finish()
            return report
        }
        var budget = options.entriesPerTurn
        var batch: [TakenPhoto] = []
        while budget > 0 {
            guard let current = walk.current else {
                guard let next = walk.folders.popLast() else {
                    walk.finish()
                    break
                }
                budget -= 1
                open(next, options, root: root, walk, &report)
                continue
            }
            guard let ent = readdir(current.dir) else {
                closedir(current.dir)
                walk.current = nil
                continue
            }
            budget -= 1
            let bytes = withUnsafeBytes(of: ent.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            guard let base = String(validating: bytes, as: UTF8.self) else {
                rejectBadName(bytes, in: current.folder, under: current.relative, &report)
                continue
            }
            if base == "." || base == ".." { continue }
            let name = current.relative.isEmpty ? base : current.relative + "/" + base
            let type = ent.pointee.d_type
            let isFolder = type == DT_DIR || (type == DT_UNKNOWN && current.folder.entry(base).map { $0.st_mode & S_IFMT == S_IFDIR } == true)
            if isFolder {
                if !walk.deep { continue }
                if base.hasPrefix(".") { continue }  // a tool's, like every dot name: not listed
                if let why = Self.notWalked(base, depth: current.depth + 1, options) {
                    if let st = current.folder.entry(base) {
                        report.skipped[name] = SkippedEntry(reason: why, owner: UnixUser.nameOrNumber(st.st_uid))
                    }
                } else {
                    walk.folders.append((name, current.depth + 1))
                }
                continue
            }
            // A `keep` inbox is never written, and its files never renamed aside: nothing to put back.
            if options.originalsMode != .keep, let back = InboxOptions.Originals.leftByAnEarlierRun(base) {
                do {
                    let named = try InboxOptions.Originals.putBack(base, in: current.folder, as: back)
                    Log.notice("put back \(name) as \(named): a daemon was killed while releasing it")
                } catch {
                    report.errors.append("putting back \(name): \(error)")
                }
                continue
            }
            if PhotoPolicy.isIgnoredInboxName(name, globs: options.ignore) {
                noteIfStale(name, base: base, in: current.folder, &report)
                continue
            }
            if let p = examine(name, requireSettled: true, &report, root: root, held: (current.folder, base)) { batch.append(p) }
            if batch.count >= Self.batchSize {
                commit(batch, &report)
                batch.removeAll(keepingCapacity: true)
            }
        }
        commit(batch, &report)
        // `keep`: nothing leaves the inbox.
        if walk.finished && walk.isWhole && !quarantine.keepsInbox { removeFinishedDuplicates(&report) }
        walk.found.skipped.merge(report.skipped)
        walk.found.stale.merge(report.stale)
        for name in report.unsettled { walk.found.unsettled[InboxWalk.folder(of: name), default: []].insert(name) }
        walk.found.untaken += report.untaken
        walk.found.atCap.formUnion(report.atCap)
        walk.found.overQuota.formUnion(report.overQuota.keys)
        if walk.finished && walk.isWhole { quota?.noteStale(walk.found.stale.byOwner().mapValues(\.bytes)) }
        return report
    }

    /// A held folder's device and inode (nil if it cannot be asked).
    static func folderID(_ fd: Int32) -> [UInt64]? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        return [UInt64(st.st_dev), UInt64(st.st_ino)]
    }

    /// Why the folder `base` at `depth` is not walked into, listed as left alone; nil to walk it.
    static func notWalked(_ base: String, depth: Int, _ options: InboxOptions) -> String? {
        if PhotoPolicy.isToolStateFolder(base) { return "a tool's state folder (not looked into)" }
        if depth > options.depth { return "a folder deeper than inbox.depth (\(options.depth)): not looked into" }
        return nil
    }

    /// Opens the folder `next` to read it, watched first (a file made while it is read is
    /// then an event, not missed); a folder gone or swapped for a link is passed over.
    private func open(_ next: (relative: String, depth: Int), _ options: InboxOptions, root: OpenFolder, _ walk: InboxWalk,
                      _ report: inout Report) {
        // The first folder of a walk of a subtree (one just made) is checked as its parent's walk would.
        if !next.relative.isEmpty, next.relative == walk.under {
            let parts = next.relative.split(separator: "/")
            if parts.contains(where: { PhotoPolicy.isToolStateFolder($0) }) { return }
            if next.depth > options.depth { return }
        }
        let folder: OpenFolder
        do { folder = try root.folderBeneath(next.relative) } catch let e as SystemError where [ENOENT, ENOTDIR, ELOOP, EXDEV].contains(e.errno) {
            return
        } catch {
            report.errors.append("cannot open \(inbox)/\(next.relative): \(error)")
            return
        }
        if walk.opened.isEmpty {
            // A subtree's walk: the folders above it are its ancestors, met again only in a loop.
            var above = ""
            for part in next.relative.split(separator: "/").dropLast() {
                above += (above.isEmpty ? "" : "/") + part
                if let f = try? root.folderBeneath(above), let id = Self.folderID(f.fd) { walk.opened.insert(id) }
            }
            if let id = Self.folderID(root.fd) { walk.opened.insert(id) }
        }
        guard let id = Self.folderID(folder.fd), walk.opened.insert(id).inserted || next.relative.isEmpty else {
            var st = stat()
            fstat(folder.fd, &st)
            report.skipped[next.relative] = SkippedEntry(reason: "a folder already walked under another name (a bind mount or a loop): not looked into",
                                                         owner: UnixUser.nameOrNumber(st.st_uid))
            return
        }
        if !next.relative.isEmpty { watchFolder?(folder.fd, next.relative) }
        guard let copy = try? syscall("dup", blocking: { fcntl(folder.fd, F_DUPFD_CLOEXEC, 0) }) else { return }
        let dir: OpaquePointer
        do { dir = try syscall("fdopendir", pointer: { fdopendir(copy) }) } catch let e as SystemError {
            close(copy)
            report.errors.append("cannot read \(folder.path): \(e.reason)")
            return
        } catch { close(copy); return }
        walk.current = (folder, dir, next.relative, next.depth)
    }
}
