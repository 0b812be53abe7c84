import Foundation
import Journal
import StageKit
import Testing
@testable import Runtime

/// A user's reprocess jobs' copies of originals are bounded in bytes (admins' only by the
/// disk): a user whose queued jobs' copies hold 4 GiB already may not copy one byte more.
@Suite struct ReprocessRoomUnitTests {
    @Test func aUserWhoseCopiesHoldTheirShareIsStoppedAndAnAdminIsNot() throws {
        let t = try TestHome()
        let user = Caller(uid: 60_001)
        // A sparse copy of 4 GiB: its size counts, its blocks are not written.
        let copy = t.home.reprocess + "/big.jpg"
        try FileManager.default.createDirectory(atPath: t.home.reprocess, withIntermediateDirectories: true)
        let fd = open(copy, O_WRONLY | O_CREAT, 0o600)
        #expect(fd >= 0 && ftruncate(fd, off_t(ReprocessRoom.maxBytesPerUser)) == 0)
        close(fd)
        var memo = MemoJob(memo: "m", type: "Photo", owner: user.name)
        memo.record = "r1"
        let job = ReprocessJob(key: ReprocessJob.key(record: "r1", changeTag: "1", from: "compress"), memo: memo, photoPath: copy,
                               sha256: String(repeating: "a", count: 64), working: WorkingSet(photoPath: copy, sha256: nil))
        #expect(try t.journal.enqueueReprocess([job], stageIndex: 0).count == 1)

        let room = ReprocessRoom(journal: t.journal, folder: t.home.reprocess)
        let users = try room.turn(for: user.name) { $0.take(1) }
        #expect(users?.contains("\(user.name)'s reprocess jobs hold 4294967296 bytes of copies of originals; a user's may hold 4294967296") == true)
        // An admin's turn (nil): only the disk bounds it; more than the filesystem has free is refused.
        let (one, huge) = try room.turn(for: nil) { ($0.take(1), $0.take(.max / 2)) }
        #expect(one == nil && huge?.contains("less than 10% free") == true)
    }
}
