import Foundation
import Glibc
import Journal
import StageKit

/// How many more bytes of originals a `reprocess` request may copy into `HOME/reprocess`
/// (each job runs from a copy of its own). Without a bound, an admin's reprocess of every
/// record after a definition change copied every original at once (100,000 photos of 5 MB:
/// 500 GB), and a user's 1,000 jobs of 50 MB photos 50 GB: the disk filled, and every
/// user's intake stopped with it. So a request stops (`stopped`, as at the job cap) where
/// one more copy would leave the home's filesystem less than a tenth free, or would take a
/// user's copies past `maxBytesPerUser`; asked again once jobs have run, it goes on where
/// it stopped (records queued already are skipped).
struct ReprocessRoom {
    /// A user's copies waiting for their jobs, at most (admins: only the disk bounds them).
    static let maxBytesPerUser: Int64 = 4 << 30
    /// The share of the home's filesystem copies leave free.
    static let keepFree = 0.10

    private let user: String?
    private var held: Int64
    private var free: Int64
    private let floor: Int64

    /// `caller`'s room now: their copies' bytes (unless an admin), the filesystem of `folder`.
    init(for caller: Caller, journal: any JobJournal, folder: String) throws {
        user = caller.isAdmin ? nil : caller.name
        held = try user.map { try journal.reprocessCopies(owner: $0).saturatedSum(Self.size) } ?? 0
        var st = statvfs()
        guard statvfs(folder, &st) == 0 else { throw SystemError("statvfs \(folder)", errno: errno) }
        free = Int64(clamping: UInt64(st.f_bavail) &* UInt64(st.f_frsize))
        floor = Int64(Double(UInt64(st.f_blocks) &* UInt64(st.f_frsize)) * Self.keepFree)
    }

    /// Takes `bytes` for one more copy; else why the request stops here.
    mutating func take(_ bytes: Int64) -> String? {
        if let user, held.addingSaturated(bytes) > Self.maxBytesPerUser {
            return "\(user)'s reprocess jobs hold \(held) bytes of copies of originals; a user's may hold \(Self.maxBytesPerUser); reprocess again once some have finished"
        }
        if free - bytes < floor {
            return "one more copy of an original would leave the home's filesystem less than \(Int(Self.keepFree * 100))% free (\(floor) bytes); reprocess again once some jobs have finished"
        }
        held = held.addingSaturated(bytes)
        free -= bytes
        return nil
    }

    static func size(_ path: String) -> Int64 {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : 0
    }
}
