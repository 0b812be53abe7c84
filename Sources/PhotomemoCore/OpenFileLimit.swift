import Glibc

/// Raises the soft limit on open descriptors to the hard one (at most 1,048,576), as
/// daemons do: systemd starts services at a soft 1,024, and every queue file, inbox
/// folder watch, client and database connection holds one. Returns the limit in force.
@discardableResult
public func raiseOpenFileLimit() -> UInt64 {
    var limit = rlimit()
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    guard getrlimit(resource, &limit) == 0 else { return 0 }
    let wanted = min(limit.rlim_max, 1 << 20)
    if limit.rlim_cur < wanted {
        var raised = limit
        raised.rlim_cur = wanted
        if setrlimit(resource, &raised) == 0 { return UInt64(wanted) }
    }
    return UInt64(limit.rlim_cur)
}
