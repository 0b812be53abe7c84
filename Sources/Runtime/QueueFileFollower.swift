import EventLoop
import Glibc
import StageKit

/// Which file a queue file's path names, followed across replacements: the file being
/// read is held open, and so is each file that replaced it while its rest was unread
/// (oldest first), so a file renamed over one that is renamed over in turn before the old
/// rest is read loses no line — up to `maxPending` of them: past that, the newest replaces
/// the newest held (renamed over 20,000 times while its owner sat at their cap, one file
/// held every descriptor the daemon had, and intake and the socket stopped for everyone).
/// Owns every descriptor it holds. Used only from the serial intake lane, through its
/// `QueueReader`.
final class QueueFileFollower {
    /// A queue file held open, and its inode (its identity while it is held).
    struct OpenFile {
        let fd: Int32
        let inode: UInt64
    }

    /// What the path names now.
    enum AtPath {
        case file(OpenFile)
        /// A symlink: not followed, the file is not read (StrictModes).
        case symlink
        /// An entry that does not open (a socket, a file the daemon may not read) or is no
        /// regular file (a FIFO, a folder): why, and its owner. It is not read, nor held
        /// open; the held files are read to their end.
        case unopenable(reason: String, owner: UInt32)
        /// Nothing: the held files are read to their end.
        case nothing
    }

    let path: String
    /// The file being read.
    private(set) var held: OpenFile?
    /// Files that replaced `held` while its rest was still to read, oldest first.
    private var pending: [OpenFile] = []
    static let maxPending = 4
    /// Replacements let go unread since the reader last asked (`takeSkipped`).
    private var skipped = 0

    init(path: String) { self.path = path }

    deinit { for f in (held.map { [$0] } ?? []) + pending { close(f.fd) } }

    /// Opens what the path names (never through a link, never waiting on a FIFO) and takes
    /// it in: the file to read when none is held, one more replacement to read after the
    /// held one when it is new, else closed again (it is held already).
    func lookAtPath() throws -> AtPath {
        let fd: Int32
        do {
            fd = try syscall("open \(path)", blocking: { open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) })
        } catch let e as SystemError where e.errno == ELOOP {
            return .symlink
        } catch let error as SystemError {
            // Gone (or never there) is nothing; anything else is there and said why.
            guard let st = try? Files.lstatEntry(path) else { return .nothing }
            let why = st.st_mode & S_IFMT == S_IFREG ? "cannot be opened: \(error.reason)" : "is a \(Files.kind(st)), not a queue file"
            return .unopenable(reason: "\(path) \(why)", owner: st.st_uid)
        }
        let st: stat
        do { st = try Self.status(fd, path: path) } catch { close(fd); throw error }
        // Not held: a FIFO or a folder has no lines to follow, and each held one was a
        // descriptor a user could make the daemon keep.
        if st.st_mode & S_IFMT != S_IFREG {
            close(fd)
            return .unopenable(reason: "\(path) is a \(Files.kind(st)), not a queue file", owner: st.st_uid)
        }
        let file = OpenFile(fd: fd, inode: UInt64(st.st_ino))
        if held == nil {
            held = file
        } else if held!.inode == file.inode || pending.contains(where: { $0.inode == file.inode }) {
            close(fd)
        } else {
            if pending.count == Self.maxPending {
                close(pending.removeLast().fd)
                skipped += 1
            }
            pending.append(file)
        }
        return .file(file)
    }

    /// How many replacements were let go unread since the last call (then 0).
    func takeSkipped() -> Int {
        defer { skipped = 0 }
        return skipped
    }

    /// The held file, if the path no longer names it (replaced or removed): its rest is read
    /// before the file that replaced it.
    func replaced(byInode inode: UInt64?) -> OpenFile? {
        guard let h = held, h.inode != inode else { return nil }
        return h
    }

    /// The held file was read to its end (or may not be read): close it and go on to the
    /// file that replaced it, if any.
    func finishHeld() {
        if let h = held { close(h.fd) }
        held = pending.isEmpty ? nil : pending.removeFirst()
    }

    /// fstat, checked: what the held descriptor is now (its owner, mode, links and size).
    static func status(_ fd: Int32, path: String) throws -> stat {
        var st = stat()
        try syscall("fstat \(path)", blocking: { fstat(fd, &st) })
        return st
    }

    /// Why a held queue file (a regular file: `lookAtPath` holds no other) may not be read,
    /// or nil. Like sshd's StrictModes: a file that anyone but its owner may write
    /// (group/other write bits, a second hard link) could hold anyone's lines.
    static func refusal(_ st: stat, path: String) -> String? {
        if st.st_mode & 0o022 != 0 {
            return "\(path) is writable by users other than its owner (mode \(String(st.st_mode & 0o7777, radix: 8))), so its lines "
                + "could be anyone's; it is not read until: chmod go-w \(path)"
        }
        if st.st_nlink > 1 { return "\(path) has \(st.st_nlink) hard links; a queue file is read only with one" }
        return nil
    }
}
