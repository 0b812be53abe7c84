import Foundation
import Glibc
import StageKit

/// Each user's bad queue lines in quarantine, counted so that no one fills the disk with
/// them: a bad line costs its writer two bytes and the daemon two files (an attack review
/// turned 40 KB of `x` lines into 40,024 files in 10 s, past any quota). A user holding
/// `maxPerUser` of them has their next bad line and the rest of its file wait unread
/// (`QueueReader`) until retention or an admin removes some. A quarantined line's file
/// is its writer's (chowned when the daemon runs as root): the count is of the files in
/// the folder by owner, read once and kept up to date, and read again (at most every
/// `rescanSeconds`) while a user is at the cap, so what was removed shows.
final class QuarantinedLines: @unchecked Sendable {
    static let maxPerUser = 1_000
    static let prefix = "queue-line-"

    let folder: String
    let maxPerUser: Int
    let rescanSeconds: Double
    private let lock = NSLock()
    private var counts: [uid_t: Int]?
    private var scannedAt = 0.0

    init(folder: String, maxPerUser: Int = QuarantinedLines.maxPerUser, rescanSeconds: Double = 10) {
        (self.folder, self.maxPerUser, self.rescanSeconds) = (folder, maxPerUser, rescanSeconds)
    }

    /// Whether `uid` holds as many quarantined lines as a user may.
    func atCap(_ uid: uid_t) -> Bool {
        lock.withLock {
            let now = unixNow()
            if counts == nil || (counts![uid, default: 0] >= maxPerUser && now - scannedAt >= rescanSeconds) {
                counts = scan()
                scannedAt = now
            }
            return counts![uid, default: 0] >= maxPerUser
        }
    }

    /// A line of `uid`'s was quarantined.
    func added(_ uid: uid_t) {
        lock.withLock { counts?[uid, default: 0] += 1 }
    }

    private func scan() -> [uid_t: Int] {
        var out: [uid_t: Int] = [:]
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return out }
        for name in names where name.hasPrefix(Self.prefix) && !name.hasSuffix(".reason.json") {
            if let st = try? Files.lstatEntry(folder + "/" + name) { out[st.st_uid, default: 0] += 1 }
        }
        return out
    }
}
