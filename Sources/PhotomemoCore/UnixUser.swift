import Glibc
import StageKit

/// User names for uids (file owners, socket peers), through the reentrant getpwuid_r,
/// and who counts as an admin (DESIGN.md, "Who may do what"): root and the daemon's own
/// uid. Identity always comes from the kernel — a peer's SO_PEERCRED, a file's owner —
/// never from what a client writes.
public enum UnixUser {
    /// The name each uid had at its last lookup that worked: what a lookup that fails
    /// (no descriptor free, the name service down) answers, instead of nil, so a user's
    /// photo is not recorded as the number's (whose jobs they would not see).
    private static let lastKnown = LockedValue<[UInt32: String]>([:])

    /// The uid's name; nil when it has no passwd entry.
    public static func name(_ uid: UInt32) -> String? {
        var size = 4096
        while true {
            var pwd = passwd()
            var result: UnsafeMutablePointer<passwd>?
            var buf = [CChar](repeating: 0, count: size)
            let rc = getpwuid_r(uid, &pwd, &buf, buf.count, &result)
            if rc == ERANGE, size < 1 << 20 {
                size *= 4
                continue
            }
            guard rc == 0 else { return lastKnown.withLock { $0[uid] } }
            guard result != nil, let n = pwd.pw_name else { return nil }
            let name = String(cString: n)
            lastKnown.withLock { known in if known.count < 65_536 || known[uid] != nil { known[uid] = name } }
            return name
        }
    }

    /// The name, or the number when the uid has no passwd entry.
    public static func nameOrNumber(_ uid: UInt32) -> String { name(uid) ?? String(uid) }

    public static func isAdmin(uid: UInt32) -> Bool { uid == 0 || uid == getuid() }

    /// The owner names that are admins': root's and the daemon user's.
    public static let adminNames: Set<String> = [nameOrNumber(0), nameOrNumber(getuid())]

    /// Whether a job's or record's owner is an admin (nil: made by the daemon itself).
    public static func isAdmin(name: String?) -> Bool { name.map(adminNames.contains) ?? true }
}

/// Job keys are per owner: a user's client-chosen key (or the same photo bytes) never
/// collides with another user's, so no one learns of, or is shadowed by, another's jobs.
public enum JobKey {
    /// An admin's keys stand as written; a user's are prefixed with their name.
    public static func scoped(_ key: String, owner: String?) -> String {
        UnixUser.isAdmin(name: owner) ? key : "\(owner!)/\(key)"
    }
}
