import CPosix

/// Caps glibc's malloc arenas; call before worker threads start. With the default (8 per
/// core) the daemon's RSS crept up under libvips; 2 kept it flat (PLATFORM.md).
public func limitMallocArenas(_ count: Int32) {
    _ = pm_limit_malloc_arenas(count)
}
