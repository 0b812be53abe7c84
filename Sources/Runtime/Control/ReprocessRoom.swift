import Foundation
import Glibc
import Journal
import StageKit

/// How many more bytes of originals may be copied into `HOME/reprocess` (each reprocess
/// job runs from a copy of its own). Without a bound, an admin's reprocess of every
/// record after a definition change copied every original at once (100,000 photos of 5 MB:
/// 500 GB), and a user's 1,000 jobs of 50 MB photos 50 GB: the disk filled, and every
/// user's intake stopped with it. So copying stops where one more copy would leave the
/// home's filesystem less than a tenth free, or would take a user's copies past
/// `maxBytesPerUser`; a request stops there (`stopped`, as at the job cap) and, asked again
/// once jobs have run, goes on where it stopped (records queued already are skipped).
///
/// One a daemon, taken in turns: each turn (a page of a request: its copies and their
/// jobs queued; a round of the adopter's) reads the held bytes and the free space afresh,
/// after the turn before it has queued its jobs. Requests running at once on the pool had
/// each read them once, and each copied up to the limit.
final class ReprocessRoom: Sendable {
    /// A user's copies waiting for their jobs, at most (admins: only the disk bounds them).
    static let maxBytesPerUser: Int64 = 4 << 30
    /// The share of the home's filesystem copies leave free.
    static let keepFree = 0.10

    private let journal: any JobJournal
    /// `HOME/reprocess`.
    let folder: String
    private let turns = NSLock()

    init(journal: any JobJournal, folder: String) {
        (self.journal, self.folder) = (journal, folder)
    }

    /// Runs `body` alone among the daemon's copying into the folder, with the room left now
    /// for `user`'s copies (nil: an admin's or the adopter's, bounded by the disk only).
    /// `body` queues the jobs of the copies it makes before it returns, so the next turn's
    /// count holds them.
    func turn<T>(for user: String?, _ body: (inout Turn) throws -> T) throws -> T {
        turns.lock()
        defer { turns.unlock() }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var turn = try Turn(user: user, journal: journal, folder: folder)
        return try body(&turn)
    }

    /// The room of one turn.
    struct Turn {
        private let user: String?
        private var held: Int64
        private var free: Int64
        private let floor: Int64

        init(user: String?, journal: any JobJournal, folder: String) throws {
            self.user = user
            held = try user.map { try journal.reprocessCopies(owner: $0).saturatedSum(ReprocessRoom.size) } ?? 0
            var st = statvfs()
            guard statvfs(folder, &st) == 0 else { throw SystemError("statvfs \(folder)", errno: errno) }
            free = Int64(clamping: UInt64(st.f_bavail) &* UInt64(st.f_frsize))
            floor = Int64(Double(UInt64(st.f_blocks) &* UInt64(st.f_frsize)) * ReprocessRoom.keepFree)
        }

        /// Takes `bytes` for one more copy; else why copying stops here.
        mutating func take(_ bytes: Int64) -> String? {
            if let user, held.addingSaturated(bytes) > ReprocessRoom.maxBytesPerUser {
                return "\(user)'s reprocess jobs hold \(held) bytes of copies of originals; a user's may hold \(ReprocessRoom.maxBytesPerUser)"
            }
            if free - bytes < floor {
                return "one more copy of an original would leave the home's filesystem less than \(Int(ReprocessRoom.keepFree * 100))% free (\(floor) bytes)"
            }
            held = held.addingSaturated(bytes)
            free -= bytes
            return nil
        }
    }

    static func size(_ path: String) -> Int64 {
        var st = stat()
        return stat(path, &st) == 0 ? Int64(st.st_size) : 0
    }
}
