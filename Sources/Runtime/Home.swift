import EventLoop
import Foundation
import Glibc
import StageKit

/// The daemon's home folder and the names in it (DESIGN.md, "Home folder").
public struct Home: Sendable {
    public let root: String

    public init(_ root: String) {
        self.root = (root as NSString).standardizingPath.hasPrefix("/")
            ? (root as NSString).standardizingPath
            : (FileManager.default.currentDirectoryPath + "/" + root as NSString).standardizingPath
    }

    public var inbox: String { root + "/inbox" }
    public var queueFile: String { root + "/queue.jsonl" }
    /// One queue file per other user, `queue.d/NAME.jsonl`, owned by them.
    public var queueFolder: String { root + "/queue.d" }
    public var socket: String { root + "/photomemo.sock" }
    public var journal: String { root + "/photomemo.sqlite" }
    public var store: String { root + "/store" }
    public var quarantine: String { root + "/quarantine" }
    /// `photomemo reprocess`'s copies of stored originals, each until its job stored it again.
    public var reprocess: String { root + "/reprocess" }
    public var lockFile: String { root + "/photomemo.lock" }
    /// The fatal-signal line of the last run that crashed (empty otherwise); read at start.
    public var crashLog: String { root + "/crash.log" }
    /// The jobs whose stage runs started (`StartMarks`), mapped in memory; read at start.
    public var startMarks: String { root + "/started" }

    /// Refuses a home that other users can write (they could swap the journal or plant
    /// symlinks) before touching anything in it, then creates the layout.
    public func prepare() throws {
        if !Files.exists(root) {
            try syscall("mkdir \(root)", blocking: { mkdir(root, 0o750) })
        }
        try checkRoot()
        for dir in [inbox, store, quarantine, queueFolder] where !Files.exists(dir) {
            try syscall("mkdir \(dir)", blocking: { mkdir(dir, 0o750) })
        }
    }

    private func checkRoot() throws {
        let st = try Files.lstatEntry(root)
        guard st.st_mode & S_IFMT == S_IFDIR else {
            throw PhotomemoError(.unsafeHome, "\(root) is not a directory")
        }
        if st.st_mode & S_IWOTH != 0 {
            throw PhotomemoError(.unsafeHome,
                "\(root) is writable by other users (mode \(String(st.st_mode & 0o7777, radix: 8))); run: chmod o-w \(root)")
        }
        if st.st_uid != getuid() && getuid() != 0 {
            throw PhotomemoError(.unsafeHome, "\(root) belongs to uid \(st.st_uid), not to this user (uid \(getuid()))")
        }
    }

    /// Takes the home's exclusive lock for this process's lifetime, or says who holds it.
    public func lock() throws -> Int32 {
        let fd = try syscall("open \(lockFile)", blocking: { open(lockFile, O_RDWR | O_CREAT | O_CLOEXEC, 0o640) })
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let holder = (try? String(contentsOfFile: lockFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            close(fd)
            throw PhotomemoError(.locked,
                "another photomemo daemon (pid \(holder ?? "?")) is running on \(root)")
        }
        ftruncate(fd, 0)
        let pid = "\(getpid())\n"
        _ = pid.withCString { write(fd, $0, strlen($0)) }
        return fd
    }
}
