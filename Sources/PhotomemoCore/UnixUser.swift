import Glibc

/// User names for uids (file owners, socket peers), through the reentrant getpwuid_r.
public enum UnixUser {
    public static func name(_ uid: UInt32) -> String? {
        var pwd = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buf = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &pwd, &buf, buf.count, &result) == 0, result != nil, let n = pwd.pw_name else { return nil }
        return String(cString: n)
    }

    /// The name, or the number when the uid has no passwd entry.
    public static func nameOrNumber(_ uid: UInt32) -> String { name(uid) ?? String(uid) }
}

/// Stages that hold something the control socket needs too (found in the job
/// definition, so the socket uses the very store or index the pipeline writes).
public protocol RecordIndexStage: Stage {
    /// The SQLite file of the record index.
    var indexPath: String { get }
}

public protocol AssetStoreStage: Stage {
    var assetStore: any AssetStore { get }
}
