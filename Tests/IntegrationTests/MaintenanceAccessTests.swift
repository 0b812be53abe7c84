import Foundation
import Glibc
import PhotomemoCore
import TestSupport
import Testing

/// backup and verify are an admin's (DESIGN.md, "Who may do what"): a real second uid is
/// refused with `forbidden`, and nothing is written.
@Suite(.serialized, .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
struct MaintenanceAccessTests {
    let users = WhoMayDoWhatTests()

    @Test func aUserMayNeitherBackUpNorVerify() throws {
        let d = try users.start()
        try users.drop(users.bob, d, "Canon_40D.jpg", as: "bob.jpg")
        try d.waitIdle(jobs: 1)
        let dir = "/tmp/pm-backup-by-bob-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (status, _, err) = try users.cli(users.bob, d, ["backup", dir])
        #expect(status == 1 && err.contains("backup is for admins"), "\(err)")
        #expect(!FileManager.default.fileExists(atPath: dir))
        let raw = try users.raw(users.bob, d, [["id": 1, "cmd": "backup", "folder": .string(dir)], ["id": 2, "cmd": "verify", "repair": true]])
        #expect(raw.map { $0["error"]?["code"]?.stringValue } == ["forbidden", "forbidden"], "\(raw)")
        let (vstatus, _, verr) = try users.cli(users.bob, d, ["verify", "--repair"])
        #expect(vstatus == 1 && verr.contains("verify is for admins"), "\(verr)")
        // The admin may.
        #expect(try json(d, ["verify"])["ok"]?.intValue == 3)
    }
}
