import CPosix

/// Caps glibc's malloc arenas; call before worker threads start. With the default (8 per
/// core) the daemon's RSS crept up under libvips; 2 kept it flat (PLATFORM.md).
public func limitMallocArenas(_ count: Int32) {
    _ = pm_limit_malloc_arenas(count)
}

/// Makes glibc give freed memory back: blocks of 1 MiB and more are mapped (and unmapped
/// on free), and a heap's free top past 4 MiB is trimmed. glibc's dynamic thresholds rose
/// to the size of the first big decode buffer freed, after which such buffers came from
/// the heap and a decode or query storm left its pages resident (issue 25).
public func giveBackFreedMemory() {
    _ = pm_malloc_give_back(1 << 20, 4 << 20)
}
