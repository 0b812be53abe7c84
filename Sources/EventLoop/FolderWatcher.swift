import CUV
import Glibc
import PhotomemoCore
import StageKit

/// Watches one folder with a raw inotify fd on a `uv_poll_t`: unlike `uv_fs_event`, it
/// reports "writer closed the file" (`IN_CLOSE_WRITE`), renames in (`IN_MOVED_TO`), names
/// gone (`IN_DELETE`, `IN_MOVED_FROM`) and kernel queue overflow. When the folder itself goes away (deleted, moved, unmounted) it
/// reports `.folderGone`; `rearm()` watches the path again once it is back.
///
/// Recursive (`watch(folder:as:)`): one more watch per subfolder, added by whoever walks
/// the tree (any thread); events in a subfolder name their path relative to the folder
/// (`DCIM/IMG_1.jpg`), a folder made or moved in is `.folderAppeared`, one removed or moved
/// away `.folderRemoved` (its watches, and its subfolders', are dropped).
public final class FolderWatcher: LoopHandle {
    public enum Event: Equatable, Sendable {
        case closedAfterWrite(String)
        case movedIn(String)
        case created(String)
        case modified(String)
        /// Deleted or renamed away (a folder's too): gone under this name.
        case removed(String)
        case overflow
        case folderGone
        /// A folder made or moved in (`recursive` only): not watched yet, to be walked.
        case folderAppeared(String)
        /// A watched folder removed or moved away (`recursive` only).
        case folderRemoved(String)
    }

    public let path: String
    private let fd: Int32
    private var wd: Int32 = -1
    private var callback: (([Event]) -> Void)?
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    private let mask: UInt32
    private let recursive: Bool
    /// Subfolders' watches: descriptor → path relative to `path`. Added from the thread
    /// that walks the tree, read on the loop: behind a lock, held while a watch is added
    /// so that no event of a new watch is read before its path is known.
    /// Nil once closed: a walk finishing after close adds no watch to a closed descriptor.
    private let subfolders = LockedValue<[Int32: String]?>([:])

    /// `modifications`: also report every write (`IN_MODIFY`), for tailing a file that a
    /// producer keeps open, and every change of mode or owner (`IN_ATTRIB`, as `.modified`):
    /// a chmod that lets others write a queue file is seen at once, not at the next poll.
    /// `attributes`: only the latter (a tool setting a file's time after closing it).
    public init(loop: EventLoop, path: String, modifications: Bool = false, attributes: Bool = false, recursive: Bool = false,
                maxSubfolders: Int = FolderWatcher.subfolderBudget, _ callback: @escaping ([Event]) -> Void) throws {
        self.path = path
        self.recursive = recursive
        self.maxSubfolders = maxSubfolders
        mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
            | (modifications ? UInt32(IN_MODIFY | IN_ATTRIB) : 0) | (attributes ? UInt32(IN_ATTRIB) : 0)
        fd = try syscall("inotify_init1", blocking: { inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) })
        super.init(type: UV_POLL)
        do {
            try uvCheck(uv_poll_init(loop.uv, raw.assumingMemoryBound(to: uv_poll_t.self), fd), "uv_poll_init")
        } catch {
            Glibc.close(fd)
            throw error
        }
        retainFromHandle()
        self.callback = callback
        try arm()
        try uvCheck(uv_poll_start(raw.assumingMemoryBound(to: uv_poll_t.self), Int32(UV_READABLE.rawValue), { p, status, _ in
            LoopHandle.owner(UnsafeMutableRawPointer(p), as: FolderWatcher.self).readEvents()
        }), "uv_poll_start")
    }

    private func arm() throws {
        wd = try syscall("inotify_add_watch \(path)", blocking: { inotify_add_watch(fd, path, mask) })
    }

    /// Watches the path again (after `.folderGone`). Throws while the folder is missing.
    public func rearm() throws {
        if wd >= 0 { inotify_rm_watch(fd, wd) }
        wd = -1
        unwatch(under: "")
        try arm()
    }

    public var isWatching: Bool { wd >= 0 }

    /// The most subfolders one watcher watches: half of fs.inotify.max_user_watches. The
    /// watches count against the limit of the daemon's uid (root), shared by every process
    /// of that uid: a user making 200,000 empty folders in the inbox must not use up the
    /// watches systemd and every other root service need.
    public static let subfolderBudget: Int = {
        let bytes = (try? OpenFolder("/proc/sys/fs/inotify").contents("max_user_watches")) ?? nil
        let limit = bytes.flatMap { Int(String(decoding: $0.prefix { $0 >= 0x30 && $0 <= 0x39 }, as: UTF8.self)) } ?? 8192
        return max(1, limit / 2)
    }()
    /// `subfolderBudget`, unless made lower.
    public let maxSubfolders: Int

    /// Watches the subfolder `relative`, held open as `folder` (watched through
    /// /proc/self/fd: the very folder that was opened beneath the root, never a path a link
    /// could redirect). Callable from any thread. Fails past `maxSubfolders`, or with ENOSPC
    /// past fs.inotify.max_user_watches: the periodic rescan still sees that folder.
    public func watch(folder: Int32, as relative: String) throws {
        try subfolders.withLock { map in
            guard map != nil else { return }
            guard map!.count < maxSubfolders else {
                throw PhotomemoError(.io, "already watching \(maxSubfolders) folders of \(path), half of fs.inotify.max_user_watches")
            }
            let sub = try syscall("inotify_add_watch \(path)/\(relative)", blocking: {
                inotify_add_watch(fd, "/proc/self/fd/\(folder)", mask | UInt32(IN_ONLYDIR))
            })
            guard sub != wd else { return }  // the root itself, reached again (a bind mount)
            map![sub] = relative  // a watched folder moved: inotify answers its old descriptor
        }
    }

    /// How many subfolders are watched.
    public var watchedSubfolders: Int { subfolders.withLock { $0?.count ?? 0 } }

    /// Drops the watches of `relative` and every folder beneath it ("": all of them).
    private func unwatch(under relative: String) {
        subfolders.withLock { map in
            for (sub, rel) in map ?? [:] where relative.isEmpty || rel == relative || rel.hasPrefix(relative + "/") {
                inotify_rm_watch(fd, sub)
                map![sub] = nil
            }
        }
    }

    private func readEvents() {
        var events: [Event] = []
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            var off = 0
            buffer.withUnsafeBytes { raw in
                while off + 16 <= n {
                    let evWd = raw.loadUnaligned(fromByteOffset: off, as: Int32.self)
                    let mask = raw.loadUnaligned(fromByteOffset: off + 4, as: UInt32.self)
                    let len = Int(raw.loadUnaligned(fromByteOffset: off + 12, as: UInt32.self))
                    let nameBytes = raw[(off + 16)..<(off + 16 + len)].prefix { $0 != 0 }
                    let base = String(decoding: nameBytes, as: UTF8.self)
                    off += 16 + len
                    if mask & UInt32(IN_Q_OVERFLOW) != 0 { events.append(.overflow); continue }
                    let prefix: String
                    if evWd == wd {
                        if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT) != 0 {
                            if wd >= 0 { wd = -1; events.append(.folderGone) }
                            continue
                        }
                        prefix = ""
                    } else if recursive, let rel = subfolders.withLock({ $0?[evWd] }) {
                        // Its own removal or move is told by its parent's event; the watch is gone once IGNORED.
                        if mask & UInt32(IN_IGNORED) != 0 { subfolders.withLock { if $0?[evWd] == rel { $0![evWd] = nil } } }
                        if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT) != 0 { continue }
                        prefix = rel + "/"
                    } else {
                        continue
                    }
                    let name = prefix + base
                    if mask & UInt32(IN_ISDIR) != 0 {
                        guard recursive else {
                            if mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 { events.append(.removed(name)) }
                            continue
                        }
                        if mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 {
                            unwatch(under: name)
                            events.append(.folderRemoved(name))
                        }
                        if mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 { events.append(.folderAppeared(name)) }
                        continue
                    }
                    if mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 { events.append(.removed(name)); continue }
                    if mask & UInt32(IN_CLOSE_WRITE) != 0 { events.append(.closedAfterWrite(name)) }
                    if mask & UInt32(IN_MOVED_TO) != 0 { events.append(.movedIn(name)) }
                    if mask & UInt32(IN_CREATE) != 0 { events.append(.created(name)) }
                    if mask & UInt32(IN_MODIFY | IN_ATTRIB) != 0 { events.append(.modified(name)) }
                }
            }
        }
        if !events.isEmpty { callback?(events) }
    }

    override func willClose() {
        uv_poll_stop(raw.assumingMemoryBound(to: uv_poll_t.self))
    }

    // The fd outlives the poll handle: libuv must be done with it before it is closed.
    override func didClose() {
        subfolders.value = nil
        Glibc.close(fd)
        callback = nil
    }
}
