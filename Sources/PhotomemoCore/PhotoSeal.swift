import CPosix
import Glibc

/// When a photo's bytes need no second SHA-256: intake hashed them, and since then nobody
/// outside the admins (root and the daemon's own uid, DESIGN "Who may do what") can have
/// changed them. A stage that finds its photo sealed trusts intake's hash; one that does
/// not re-hashes what it reads, as before, and refuses bytes that differ.
///
/// Sealed: a regular file owned by the daemon's euid, with one name, writable by neither
/// group nor other — so only the daemon's user (or root) may open it for writing, and they
/// can rewrite the journal and the store as well: trusting them adds no power — AND its
/// seal (device, inode, size, mtime, ctime) is still the one intake recorded before and
/// after hashing it. The ctime is the kernel's: no one can set it back, so a recycled
/// inode with a restored mtime (`cp -p`), or a write through a share that maps every
/// writer to the daemon's uid, shows as a new ctime and the photo is hashed again.
/// A photo of another uid (a group-writable or sticky inbox), a second hard link, or a
/// mode that lets others write keeps every re-check: such a writer may hold a descriptor
/// opened before any chmod.
/// Not covered: the daemon's own user (or root) writing through a shared mapping (pages
/// already dirty change no timestamps), or, on kernels before 6.13 (no fine-grained
/// ctime), within the clock tick of intake's stat — an admin's own doing either way.
public enum PhotoSeal {
    /// "dev:ino:size:mtime_ns": changes when a file is replaced or rewritten.
    public static func identity(_ st: stat) -> String {
        "\(st.st_dev):\(st.st_ino):\(st.st_size):\(nanoseconds(st.st_mtim))"
    }

    /// A time as nanoseconds, wrapping: any user can set an mtime past 2262 (`touch -d
    /// 2400-01-01`), whose nanoseconds overflow Int64 and trapped the daemon at intake.
    /// The value only needs to change when the time does.
    static func nanoseconds(_ t: timespec) -> Int64 {
        Int64(t.tv_sec) &* 1_000_000_000 &+ Int64(t.tv_nsec)
    }

    /// The size a seal (or an identity) recorded: the photo's bytes when intake took it.
    public static func size(_ seal: String) -> Int64? {
        let parts = seal.split(separator: ":")
        return parts.count >= 3 ? Int64(parts[2]) : nil
    }

    /// Only the daemon's user (and root) can write it: the daemon's euid owns the regular
    /// file, it has no other name, and neither group nor other may write it.
    public static func onlyAdminsCanWrite(_ st: stat) -> Bool {
        st.st_mode & S_IFMT == S_IFREG && st.st_uid == geteuid() && st.st_nlink == 1 && st.st_mode & 0o022 == 0
    }

    /// "dev:ino:size:mtime_ns:ctime_ns": what intake records of a photo it hashed, when the
    /// file was the same before and after (`identity` alone decides what is taken twice, and
    /// must not change when the store chmods its inode).
    public static func seal(_ st: stat) -> String {
        identity(st) + ":\(nanoseconds(st.st_ctim))"
    }

    /// Whether the file `st` describes (the fstat of `fd`, about to be read) is sealed
    /// against `taken`, the seal intake recorded (nil: none recorded, never sealed). Only on
    /// a local filesystem the kernel keeps the times of: a network or FUSE server may
    /// report any owner, link count and ctime.
    public static func holds(_ st: stat, of fd: Int32, taken: String?) -> Bool {
        guard let taken, onlyAdminsCanWrite(st), seal(st) == taken else { return false }
        return localFilesystems.contains(UInt(pm_filesystem_type(fd)))
    }

    /// ext2/3/4, XFS, Btrfs, tmpfs (`statfs` f_type).
    static let localFilesystems: Set<UInt> = [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994]
}
