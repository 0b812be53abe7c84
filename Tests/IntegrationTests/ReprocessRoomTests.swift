import Foundation
import StageKit
import TestSupport
import Testing

/// Each reprocess job runs from a copy of its record's original in `HOME/reprocess`: a
/// request stops where one more copy would leave the home's filesystem less than a tenth
/// free (an admin's reprocess of every record copied every original at once), and goes on
/// when asked again once there is room. The home is a small tmpfs (needs root).
@Suite(.serialized, .enabled(if: getuid() == 0))
struct ReprocessRoomTests {
    @Test func aReprocessStopsBeforeItsCopiesFillTheDiskAndGoesOnWhenThereIsRoom() throws {
        let d = try DaemonHarness(stages: ReprocessTests.definition(width: 60))
        let unmount = try FullDiskTests().smallDisk(d, megabytes: 32)
        defer { unmount() }
        try d.start()
        for i in 0..<3 {  // made on the tmpfs: a rename from elsewhere crosses filesystems
            let temp = d.home + "/inbox/.p\(i).png.part"
            try makePNG(temp, mode: "grey", width: 300 + i, height: 300)
            #expect(rename(temp, d.home + "/inbox/p\(i).png") == 0)
        }
        try d.waitIdle(jobs: 3)
        fillReprocessRoom(d.home)  // just under the tenth a reprocess keeps free

        func reprocess() throws -> (Int32, JSONValue) {
            let (status, out, err) = try DaemonHarness.run(["reprocess", "TRUEPREDICATE", "--home", d.home, "--json"])
            return (status, (try? JSONValue.parse(out)) ?? .string(err))
        }
        let (refused, full) = try reprocess()
        #expect(refused == 1 && full["enqueued"]?.intValue == 0, "\(full)")
        #expect(full["stopped"]?.stringValue?.contains("one more copy of an original would leave the home's filesystem less than 10% free") == true, "\(full)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: d.home + "/reprocess").isEmpty)
        #expect(unlink(d.home + "/filler") == 0)
        let (status, answer) = try reprocess()
        #expect(status == 0 && answer["enqueued"]?.intValue == 3 && answer["stopped"] == .null, "\(answer)")
        try d.waitUntil("the reprocess jobs are done") { try json(d, ["status"])["reprocess"]?["done"]?.intValue == 3 }
    }
}

/// Fills `home`'s filesystem (a test's tmpfs) with `home/filler` to leave `room` bytes above
/// the tenth a reprocess keeps free (the default: just under it).
func fillReprocessRoom(_ home: String, leaving room: Int = -(64 << 10)) {
    var st = statvfs()
    #expect(statvfs(home, &st) == 0)
    let (free, size) = (Int(st.f_bavail) * Int(st.f_frsize), Int(st.f_blocks) * Int(st.f_frsize))
    let filler = open(home + "/filler", O_WRONLY | O_CREAT, 0o600)
    #expect(filler >= 0 && posix_fallocate(filler, 0, off_t(free - size / 10 - room)) == 0)
    close(filler)
}
