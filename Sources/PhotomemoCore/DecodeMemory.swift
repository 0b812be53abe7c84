import Glibc
import StageKit

/// The daemon's budget for decoding photos (the job definition's `"memory_mb"`; default
/// a quarter of the machine's RAM): a decode reserves what it is estimated to need before
/// it starts and gives it back when done. One per daemon, in its `ResourcePool`
/// (`shared(in:)`), so tests each have their own.
public final class DecodeMemory: Sendable {
    private let state: LockedValue<(limit: Int64, reserved: Int64, first: Waiter?)>

    /// The oldest decode refused for want of room, still asking: room is kept for it, so a
    /// steady stream of smaller photos cannot starve a large one (each of them fitting
    /// beside the others while it never does).
    struct Waiter {
        let key: String
        let bytes: Int64
        var asked: Double
    }

    /// A waiter that has not asked again for this long (its job cancelled, failed, or
    /// another host took it) keeps no room.
    public static let waiterGoneSeconds = 120.0

    public init(limitBytes: Int64 = DecodeMemory.defaultLimitBytes) {
        state = LockedValue((limitBytes, 0, nil))
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

    /// Reserves `bytes` for the decode of `key` (a job's; release them with `release`), or
    /// says why not. The first refused keeps its place: later ones are reserved only
    /// beside the room it needs, until it gets it.
    public func reserve(_ bytes: Int64, for key: String = "", now: Double = unixNow()) -> Answer {
        state.withLock { s in
            let mb = { (b: Int64) in "\((b + (1 << 20) - 1) >> 20) MB" }
            if bytes > s.limit {
                return .never("decoding it needs about \(mb(bytes)), more than the whole decode memory budget (memory_mb: \(s.limit >> 20))")
            }
            if let first = s.first, now - first.asked > Self.waiterGoneSeconds { s.first = nil }
            let mine = !key.isEmpty && s.first?.key == key
            let kept = mine ? 0 : s.first?.bytes ?? 0
            if s.reserved + bytes + kept > s.limit {
                if mine { s.first?.asked = now } else if s.first == nil && !key.isEmpty { s.first = Waiter(key: key, bytes: bytes, asked: now) }
                let held = kept > 0 && s.reserved + bytes <= s.limit ? "; \(mb(kept)) are kept for a photo waiting longer" : ""
                return .wait("decoding it needs about \(mb(bytes)); other decodes hold \(mb(s.reserved)) of the \(s.limit >> 20) MB budget (memory_mb)\(held)")
            }
            if mine { s.first = nil }
            s.reserved += bytes
            return .reserved
        }
    }

    public func release(_ bytes: Int64) {
        state.withLock { $0.reserved = max(0, $0.reserved - bytes) }
    }
}
