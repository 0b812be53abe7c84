import Glibc
import StageKit

/// A job's photo, opened once by a stage (validate, compress, upload) and then read from
/// this descriptor only: never reopened by its path, which another user may have changed.
///
/// The daemon runs as root, so the open is where it must not be fooled: the path is
/// resolved beneath the folder intake allowed (the inbox or an --allow-root), with no
/// symlink and no ".." at any component (`OpenFolder.openBeneath`), so a folder swapped
/// for a link to /etc after intake leads nowhere. On the descriptor, before a byte is
/// read: a regular file; for a user's job, a file that user owns (as intake required); the
/// inode intake sealed, when it sealed one. Any of these failing is "changed after it was
/// taken", with nothing of the file there now (size, hash) in the message: it may be
/// another user's, and the job's error is shown to its owner.
public final class PhotoFile: @unchecked Sendable {  // immutable; the descriptor closes with it
    public let fd: Int32
    public let path: String
    public let stat: Glibc.stat

    /// The job's photo, within `maxBytes`. `.photoGone` when it is gone, `.badImage` when
    /// it cannot be the photo taken (changed, a link, not a file, too large), `.badPath`
    /// when no allowed folder holds it any more, `.io` for a failure worth a retry.
    public convenience init(_ job: JobContext, maxBytes: Int64) throws {
        guard let path = job.photoPath else { throw PhotomemoError(.notFound, "job \(job.id) has no photo") }
        guard let root = job.photoRoot else {
            throw PhotomemoError(.badPath, "photo \(path) is outside the inbox and every --allow-root")
        }
        try self.init(path, beneath: root, owner: job.photoIsDaemons ? nil : job.memo.owner, seal: job.photoSeal, maxBytes: maxBytes)
    }

    /// `path` opened beneath `root` (a prefix of it), checked against `owner` (a user's
    /// name; an admin's job may name anyone's file) and `seal` (`PhotoSeal.seal`, if any).
    public init(_ path: String, beneath root: String, owner: String?, seal: String?, maxBytes: Int64) throws {
        let prefix = root.hasSuffix("/") ? root : root + "/"
        guard path.hasPrefix(prefix) else { throw PhotomemoError(.badPath, "photo \(path) is outside \(root)") }
        let fd: Int32
        do {
            fd = try OpenFolder(root, followLink: true)  // the admin's own setting
                .openBeneath(String(path.dropFirst(prefix.count)), O_RDONLY | O_NONBLOCK)
        } catch let e as SystemError {
            switch e.errno {
            case ENOENT, ENOTDIR: throw PhotomemoError(.photoGone, "photo file is gone: \(path)")
            case ELOOP, EXDEV: throw PhotomemoError(.badImage, "photo \(path) is reached through a symlink, which is not followed")
            default: throw PhotomemoError(.io, "cannot open \(path): \(e.reason)")
            }
        }
        var st = Glibc.stat()
        let problem: PhotomemoError?
        do {
            try syscall("fstat \(path)", blocking: { fstat(fd, &st) })
            problem = Self.problem(st, path, owner: owner, seal: seal, maxBytes: maxBytes)
        } catch {
            problem = PhotomemoError(.io, "cannot \(error)")
        }
        if let problem {
            close(fd)
            throw problem
        }
        self.fd = fd
        self.path = path
        stat = st
    }

    deinit { close(fd) }

    /// Why the opened file `st` cannot be read as the job's photo, if it cannot.
    static func problem(_ st: Glibc.stat, _ path: String, owner: String?, seal: String?, maxBytes: Int64) -> PhotomemoError? {
        guard st.st_mode & S_IFMT == S_IFREG else { return PhotomemoError(.badImage, "photo is not a regular file: \(path)") }
        // Before the size: nothing of another user's file is told.
        let owners = UnixUser.isAdmin(name: owner) || UnixUser.nameOrNumber(st.st_uid) == owner
        // The sealed size too: a photo grown since (sparse, to a terabyte) was read to its end.
        // Another inode is not refused here: it is not sealed (`PhotoSeal.holds`), so what
        // reads it hashes it and refuses other bytes. Intake takes a file renamed over an
        // unfinished job's photo with the same bytes as that job's photo (`addPhoto`), after
        // the claim read the seal: refusing it failed the job and quarantined the photo.
        guard owners, seal.map({ PhotoSeal.size($0).map { $0 == Int64(st.st_size) } ?? true }) ?? true else {
            return PhotomemoError(.badImage, "photo changed after it was taken: \(path) is not the file taken")
        }
        guard Int64(st.st_size) <= maxBytes else {
            return PhotomemoError(.badImage, "file is \(st.st_size) bytes, over max_bytes (\(maxBytes))")
        }
        return nil
    }
}
