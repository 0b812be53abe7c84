import CPosix
import Glibc
import StageKit

extension OpenFolder {
    /// Opens `relative` ("a/b/photo.jpg") beneath this folder and nowhere else: no
    /// component may be a symlink or "..", so a folder swapped for a link (to /etc, to
    /// another user's files) after a path was checked is refused, not followed. openat2
    /// with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where the kernel has it (5.6), else one
    /// openat(O_NOFOLLOW) per component. A link met is ELOOP (EXDEV from openat2's
    /// BENEATH), thrown as a `SystemError`, as is any other failure.
    public func openBeneath(_ relative: String, _ flags: Int32) throws -> Int32 {
        let parts = relative.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard !parts.isEmpty, !parts.contains(where: { $0 == "." || $0 == ".." }) else {
            throw SystemError("open \(path)/\(relative)", errno: EXDEV)
        }
        let call = "open \(path)/\(relative)"
        do {
            return try syscall(call, blocking: { pm_openat_beneath(self.fd, relative, flags | O_NOFOLLOW | O_CLOEXEC) })
        } catch let e as SystemError where e.errno == ENOSYS || e.errno == EPERM {
            return try walk(parts, flags, call)
        }
    }

    /// The fallback: each folder opened O_DIRECTORY|O_NOFOLLOW from the one before.
    func walk(_ parts: [String], _ flags: Int32, _ call: String) throws -> Int32 {
        var at = try syscall(call, blocking: { fcntl(self.fd, F_DUPFD_CLOEXEC, 0) })
        defer { close(at) }
        for folder in parts.dropLast() {
            let next = try syscall(call, blocking: { openat(at, folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) })
            close(at)
            at = next
        }
        return try syscall(call, blocking: { openat(at, parts.last!, flags | O_NOFOLLOW | O_CLOEXEC) })
    }

    /// The folder `relative` ("a/b") beneath this one, reached as `openBeneath` reaches a
    /// file (no link, no ".."); "" is this folder again (its own descriptor).
    public func folderBeneath(_ relative: String) throws -> OpenFolder {
        let fd = relative.isEmpty
            ? try syscall("dup \(path)", blocking: { fcntl(self.fd, F_DUPFD_CLOEXEC, 0) })
            : try openBeneath(relative, O_RDONLY | O_DIRECTORY)
        return OpenFolder(path: relative.isEmpty ? path : path + "/" + relative, fd: fd)
    }

    /// The folder holding `relative` (beneath this one) and the entry's own name in it:
    /// what an entry is looked at, opened, renamed or removed through (`*at`, no link followed).
    public func parentBeneath(_ relative: String) throws -> (folder: OpenFolder, name: String) {
        guard let slash = relative.lastIndex(of: "/") else { return (try folderBeneath(""), relative) }
        return (try folderBeneath(String(relative[..<slash])), String(relative[relative.index(after: slash)...]))
    }
}
