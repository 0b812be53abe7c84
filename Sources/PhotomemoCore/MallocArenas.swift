import CPosix

/// Caps glibc's malloc arenas; call before worker threads start. With the default (8 per
/// core) the daemon's RSS crept up under libvips; 2 kept it flat (PLATFORM.md), and 1 does too.
public func limitMallocArenas(_ count: Int32) {
    _ = pm_limit_malloc_arenas(count)
}

/// How much freed memory glibc keeps for reuse; call before worker threads start. Blocks
/// of 1 MiB and more that a heap's free top cannot hold are mapped, and unmapped on free
/// (one freed decode buffer raised glibc's dynamic threshold to its size, and a decode or
/// query storm's pages stayed resident: issue 25); a heap's free top past 4 MiB is given
/// back down to `padBytes`, kept for the next photo. Without the pad every photo's file,
/// decode and resample buffers were faulted in fresh — zeroed pages, and TLB shootdowns on
/// every unmap — a fifth of a 12 MP photo's CPU (benchmarks.md). What the pad keeps goes
/// back when the daemon is quiet (`giveBackFreedMemory`, `FreedMemoryTrimmer`).
public func keepFreedMemory(padBytes: Int32) {
    _ = pm_malloc_thresholds(1 << 20, 4 << 20, padBytes)
}

/// Gives freed memory back to the system now: every arena's free pages, and the main
/// heap's free top. Takes the arenas' locks: call it off the loop.
public func giveBackFreedMemory() {
    _ = pm_malloc_trim()
}
