import Glibc

/// The daemon's budget for decoding photos (the job definition's `"memory_mb"`; default
/// a quarter of the machine's RAM): a decode reserves what it is estimated to need before
/// it starts and gives it back when done. One per daemon, in its `ResourcePool`
/// (`shared(in:)`), so tests each have their own.
public final class DecodeMemory: Sendable {
    private let state: LockedValue<(limit: Int64, reserved: Int64)>

    public init(limitBytes: Int64 = DecodeMemory.defaultLimitBytes) {
        state = LockedValue((limitBytes, 0))
    }

    public static func shared(in resources: ResourcePool) throws -> DecodeMemory {
        try resources.shared("decode-memory") { DecodeMemory() }
    }

    /// A quarter of physical memory (at least 256 MB).
    public static var defaultLimitBytes: Int64 {
        let pages = Int64(sysconf(Int32(_SC_PHYS_PAGES))), size = Int64(sysconf(Int32(_SC_PAGESIZE)))
        return max(256 << 20, pages > 0 && size > 0 ? pages * size / 4 : 1 << 30)
    }

    public var limitBytes: Int64 {
        get { state.value.limit }
        set { state.withLock { $0.limit = newValue } }
    }

    public var reservedBytes: Int64 { state.value.reserved }

    public enum Answer: Sendable, Equatable {
        case reserved
        /// Other decodes hold too much of the budget now: try again later.
        case wait(String)
        /// More than the whole budget: it can never be decoded here.
        case never(String)
    }

    /// Reserves `bytes` for a decode (release them with `release`), or says why not.
    public func reserve(_ bytes: Int64) -> Answer {
        state.withLock { s in
            let mb = { (b: Int64) in "\((b + (1 << 20) - 1) >> 20) MB" }
            if bytes > s.limit {
                return .never("decoding it needs about \(mb(bytes)), more than the whole decode memory budget (memory_mb: \(s.limit >> 20))")
            }
            if s.reserved + bytes > s.limit {
                return .wait("decoding it needs about \(mb(bytes)); other decodes hold \(mb(s.reserved)) of the \(s.limit >> 20) MB budget (memory_mb)")
            }
            s.reserved += bytes
            return .reserved
        }
    }

    public func release(_ bytes: Int64) {
        state.withLock { $0.reserved = max(0, $0.reserved - bytes) }
    }
}
