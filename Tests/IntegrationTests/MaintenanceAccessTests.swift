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

    /// A backup is the whole journal, written by the daemon (root) by path: into a folder
    /// another user owns, or one in a folder they may rename or fill, they could swap in
    /// a file of their own for photomemo.sqlite (SQLite writes into an existing empty
    /// file: everyone's records, readable by them) or a symlink. Refused before writing;
    /// a new folder in a sticky /tmp-like folder is fine.
    @Test func aBackupIntoAFolderAnotherUserCanChangeIsRefused() throws {
        let d = try users.start()
        let base = d.root + "/folders"
        mkdir(base, 0o755)
        let nobody = getpwnam(users.bob)!.pointee.pw_uid
        func folder(_ name: String, mode: mode_t, owner: uid_t) -> String {
            let path = base + "/" + name
            mkdir(path, mode)
            chmod(path, mode)
            chown(path, owner, 0)
            return path
        }
        let theirs = folder("bobs-empty", mode: 0o755, owner: nobody)
        let open = folder("world-writable", mode: 0o777, owner: 0)
        let under = folder("bobs-parent", mode: 0o755, owner: nobody) + "/backup"
        let link = base + "/link-to-bobs"
        symlink(base + "/bobs-parent", link)
        for (dir, words) in [(theirs, "belongs to \(users.bob)"), (open, "mode 777"), (under, "bobs-parent belongs to \(users.bob)"),
                             (link + "/backup", "bobs-parent belongs to \(users.bob)")] {
            let (status, _, err) = try DaemonHarness.run(["backup", dir, "--home", d.home])
            #expect(status == 1 && err.contains(words), "\(dir): \(err)")
            #expect((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] == [], "\(dir) written")
        }
        let sticky = folder("sticky", mode: 0o1777, owner: 0)
        #expect(try json(d, ["backup", sticky + "/backup"])["manifest"] != nil)
    }

    /// A backup inside a folder the daemon takes files from or removes them in: the inbox
    /// took the backup's objects as photos (27 junk records, the backup left without them;
    /// attack review). Refused before a folder is made.
    @Test func aBackupInsideTheInboxOrTheStoreIsRefused() throws {
        let d = try users.start()
        for (dir, folder) in [(d.home + "/inbox/bk", d.home + "/inbox"), (d.home + "/inbox/DCIM/bk", d.home + "/inbox"),
                              (d.home + "/store/bk", d.home + "/store"), (d.home + "/queue.d/bk", d.home + "/queue.d")] {
            try FileManager.default.createDirectory(atPath: (dir as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let (status, _, err) = try DaemonHarness.run(["backup", dir, "--home", d.home])
            #expect(status == 1 && err.contains("backup folder \(dir) is inside \(folder), which the daemon takes files from or removes them in"), "\(dir): \(err)")
            #expect(!FileManager.default.fileExists(atPath: dir), "\(dir) made")
        }
        #expect(try d.stateCounts().isEmpty)
    }

    /// `restore` checks each file the manifest names by reading it whole: a symlink to
    /// /dev/zero or a FIFO no one writes (in a backup someone tampered with) is refused
    /// at once, not read forever (it went on past SIGTERM: only SIGKILL ended it).
    @Test func restoreRefusesWhatIsNotARegularFile() throws {
        let d = try users.start()
        let dir = d.root + "/backup"
        _ = try json(d, ["backup", dir])
        let database = dir + "/photomemo.sqlite"
        let saved = d.root + "/photomemo.sqlite.saved"
        #expect(rename(database, saved) == 0)
        for (what, make) in [("symlink", { symlink("/dev/zero", database) }), ("fifo", { mkfifo(database, 0o600) })] {
            unlink(database)
            #expect(make() == 0)
            let target = d.root + "/restored-\(what)"
            let (status, _, err) = try DaemonHarness.spawn(["/usr/bin/timeout", "-s", "KILL", "10", DaemonHarness.binary, "restore", dir, "--home", target])
            #expect(status == 1 && err.contains("file photomemo.sqlite is not a regular file"), "\(what): \(status) \(err)")
            #expect(!FileManager.default.fileExists(atPath: target), "\(target) written")
        }
        // The manifest itself: read whole, so a link, a FIFO or a huge file is refused unread.
        #expect(rename(saved, database) == 0)
        let manifest = dir + "/manifest.json"
        #expect(rename(manifest, saved) == 0)
        let attempts: [(String, () -> Int32, String)] = [("manifest-symlink", { symlink("/dev/zero", manifest) }, "not a regular file (symlink)"),
                                   ("manifest-fifo", { mkfifo(manifest, 0o600) }, "not a regular file (FIFO)"),
                                   ("manifest-huge", { () -> Int32 in
                                       let fd = open(manifest, O_CREAT | O_WRONLY, 0o600)  // sparse: no disk used
                                       defer { close(fd) }
                                       return ftruncate(fd, 300 << 20) }, "a manifest has at most 256 MiB")]
        for (what, make, says) in attempts {
            unlink(manifest)
            #expect(make() == 0)
            let target = d.root + "/restored-\(what)"
            let (status, _, err) = try DaemonHarness.spawn(["/usr/bin/timeout", "-s", "KILL", "10", DaemonHarness.binary, "restore", dir, "--home", target])
            #expect(status == 1 && err.contains(says), "\(what): \(status) \(err)")
            #expect(!FileManager.default.fileExists(atPath: target), "\(target) written")
        }
    }
}
