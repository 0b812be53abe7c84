import CUV
import Glibc
import PhotomemoCore

/// Watches one folder with a raw inotify fd on a `uv_poll_t`: unlike `uv_fs_event`, it
/// reports "writer closed the file" (`IN_CLOSE_WRITE`), renames in (`IN_MOVED_TO`), names
/// gone (`IN_DELETE`, `IN_MOVED_FROM`) and kernel queue overflow. When the folder itself goes away (deleted, moved, unmounted) it
/// reports `.folderGone`; `rearm()` watches the path again once it is back.
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
    }

    public let path: String
    private let fd: Int32
    private var wd: Int32 = -1
    private var callback: (([Event]) -> Void)?
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    private let mask: UInt32

    /// `modifications`: also report every write (`IN_MODIFY`), for tailing a file that a
    /// producer keeps open, and every change of mode or owner (`IN_ATTRIB`, as `.modified`):
    /// a chmod that lets others write a queue file is seen at once, not at the next poll.
    public init(loop: EventLoop, path: String, modifications: Bool = false, _ callback: @escaping ([Event]) -> Void) throws {
        self.path = path
        mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
            | (modifications ? UInt32(IN_MODIFY | IN_ATTRIB) : 0)
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
        try arm()
    }

    public var isWatching: Bool { wd >= 0 }

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
                    let name = String(decoding: nameBytes, as: UTF8.self)
                    off += 16 + len
                    if mask & UInt32(IN_Q_OVERFLOW) != 0 { events.append(.overflow); continue }
                    guard evWd == wd else { continue }
                    if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT) != 0 {
                        if wd >= 0 { wd = -1; events.append(.folderGone) }
                        continue
                    }
                    if mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 { events.append(.removed(name)); continue }
                    if mask & UInt32(IN_ISDIR) != 0 { continue }
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
        Glibc.close(fd)
        callback = nil
    }
}
