import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing

/// The Debian package on this machine: lintian finds no error or warning, it installs with
/// dpkg (the photomemo user, /var/lib/photomemo 0750), its binary serves the packaged home
/// as the photomemo user with an empty environment and maps no Swift toolchain library, its
/// unit passes systemd-analyze verify, `dpkg -r` keeps the data and `dpkg --purge` removes it.
/// The package is $PHOTOMEMO_DEB (scripts/test builds it once), else scripts/package builds it.
/// It installs, runs and purges the real package, so it refuses a machine where photomemo is
/// already installed or /var/lib/photomemo holds data. scripts/test runs it as a step of its own.
@Suite(.serialized, .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
struct DebianPackageTests {
    let home = "/var/lib/photomemo"

    func sh(_ argv: [String], env: [String: String] = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]) throws -> (Int32, String, String) {
        try runTool(argv, environment: env)
    }

    func installed() throws -> Bool {
        try sh(["/usr/bin/dpkg-query", "-W", "-f=${Status}", "photomemo"]).1.contains("install ok installed")
    }

    func wait(_ what: String, timeout: Double = 60, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if (try? condition()) == true { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        Issue.record("timed out waiting for \(what)")
        throw CancellationError()
    }

    func package() throws -> String {
        if let deb = ProcessInfo.processInfo.environment["PHOTOMEMO_DEB"] { return deb }
        let (s, out, err) = try runTool([packageRoot.appendingPathComponent("scripts/package").path])
        try #require(s == 0, "scripts/package: \(err.suffix(3000))")
        return packageRoot.appendingPathComponent(try #require(out.split(separator: "\n").last).description).path
    }

    /// postinst chowns and chmods the home: a link planted at its path would hand the
    /// link's target to the photomemo user. The install refuses it and changes nothing there.
    @Test func aLinkAtTheHomesPathIsRefusedAndItsTargetLeftAlone() throws {
        try #require(try !installed() && !FileManager.default.fileExists(atPath: home),
                     "photomemo is installed here, or \(home) exists: this test would purge it (dpkg --purge photomemo first)")
        let deb = try package()
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("pm-deb-target-\(getpid())").path
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o755])
        try FileManager.default.createSymbolicLink(atPath: home, withDestinationPath: target)
        defer {
            try? FileManager.default.removeItem(atPath: home)
            try? FileManager.default.removeItem(atPath: target)
            _ = try? sh(["/usr/bin/dpkg", "--purge", "photomemo"])
        }
        let (status, _, err) = try sh(["/usr/bin/dpkg", "-i", deb])
        #expect(status != 0 && err.contains("/var/lib/photomemo is a symbolic link"), "dpkg -i: \(status) \(err)")
        let attributes = try FileManager.default.attributesOfItem(atPath: target)
        #expect((attributes[.ownerAccountName] as? String) == "root" && (attributes[.posixPermissions] as? Int) == 0o755,
                "the link's target kept its owner and mode: \(attributes)")
    }

    @Test func installsServesAsItsUserAndRemoveKeepsWhatPurgeDeletes() throws {
        try #require(try !installed() && !FileManager.default.fileExists(atPath: home),
                     "photomemo is installed here, or \(home) exists: this test would purge it (dpkg --purge photomemo first)")
        let deb = try package()
        defer { _ = try? sh(["/usr/bin/dpkg", "--purge", "photomemo"]) }

        let (lintStatus, lint, _) = try sh([try realTool("lintian", package: "lintian"), "--fail-on", "error,warning", deb])
        #expect(lintStatus == 0, "lintian:\n\(lint)")

        let (installStatus, _, installErr) = try sh(["/usr/bin/dpkg", "-i", deb])
        try #require(installStatus == 0, "dpkg -i: \(installErr)")
        let user = try sh(["/usr/bin/getent", "passwd", "photomemo"]).1.trimmingCharacters(in: .newlines).split(separator: ":").map(String.init)
        try #require(user.count == 7, "the photomemo user")
        #expect(Int(user[2])! < 1000 && user[5] == home && user[6] == "/usr/sbin/nologin", "a system user: \(user)")
        #expect(try sh(["/usr/bin/getent", "group", "photomemo"]).0 == 0)
        let folder = try FileManager.default.attributesOfItem(atPath: home)
        #expect((folder[.posixPermissions] as? Int) == 0o750)
        #expect((folder[.ownerAccountName] as? String) == "photomemo")

        let (_, ldd, _) = try sh(["/usr/bin/ldd", "/usr/bin/photomemo"])
        #expect(!ldd.contains("swift") && !ldd.contains("/opt/") && !ldd.contains("not found"), "ldd:\n\(ldd)")
        let (vs, version, _) = try sh(["/usr/bin/env", "-i", "/usr/bin/photomemo", "--version"], env: [:])
        #expect(vs == 0 && version == "photomemo \(PhotomemoVersion.current)\n")

        let (verifyStatus, _, verify) = try sh(["/usr/bin/systemd-analyze", "verify", "/lib/systemd/system/photomemo.service"])
        #expect(verifyStatus == 0 && !verify.contains("photomemo"), "systemd-analyze verify: \(verify)")

        // What the unit runs, with no environment and as its user (systemd is not always PID 1 where tests run).
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        daemon.arguments = ["-i", "PATH=/usr/bin:/bin", "/usr/sbin/runuser", "-u", "photomemo", "--",
                            "photomemo", "serve", "--home", home, "--job", "/etc/photomemo/photo-memo.json"]
        daemon.standardOutput = FileHandle.nullDevice
        daemon.standardError = FileHandle.nullDevice
        try daemon.run()
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
        let client = ["/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "/usr/sbin/runuser", "-u", "photomemo", "--", "photomemo"]
        try wait("photomemo status answers") { try sh(client + ["status", "--home", home], env: [:]).0 == 0 }

        // The running daemon maps nothing of a Swift toolchain.
        let pid = try #require(Int32(try String(contentsOfFile: home + "/photomemo.lock", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        // Read by cat: /proc files say they are empty, and String(contentsOfFile:) believes it.
        let maps = try sh(["/bin/cat", "/proc/\(pid)/maps"]).1
        #expect(maps.contains("/usr/bin/photomemo") && maps.contains("libc.so"), "the daemon's /proc/\(pid)/maps was read")
        #expect(!maps.contains("libswift") && !maps.contains("/opt/swift") && !maps.contains("libFoundation"), "maps:\n\(maps)")

        let drop = home + "/inbox/.Canon_40D.jpg.part"
        try Data(testPhoto("Canon_40D.jpg")).write(to: URL(fileURLWithPath: drop))
        #expect(chown(drop, UInt32(user[2])!, UInt32(user[3])!) == 0)
        #expect(rename(drop, home + "/inbox/Canon_40D.jpg") == 0)
        try wait("the photo's record") {
            let (s, out, _) = try sh(client + ["query", "TRUEPREDICATE", "--home", home, "--json"], env: [:])
            return try s == 0 && JSONValue.parse(out)["records"]?.arrayValue?.count == 1
        }
        kill(pid, SIGTERM)
        try wait("the daemon stops") { !daemon.isRunning }
        #expect(daemon.terminationStatus == 0)

        let (removeStatus, _, removeErr) = try sh(["/usr/bin/dpkg", "-r", "photomemo"])
        try #require(removeStatus == 0, "dpkg -r: \(removeErr)")
        #expect(!FileManager.default.fileExists(atPath: "/usr/bin/photomemo"))
        #expect(FileManager.default.fileExists(atPath: home + "/photomemo.sqlite"), "dpkg -r keeps the journal")
        #expect(try FileManager.default.subpathsOfDirectory(atPath: home + "/store").contains { $0.hasPrefix("sha256/") && $0.count > 70 },
                "dpkg -r keeps the store")
        #expect(FileManager.default.fileExists(atPath: "/etc/photomemo/photo-memo.json"), "dpkg -r keeps the conffile")

        let (purgeStatus, _, purgeErr) = try sh(["/usr/bin/dpkg", "--purge", "photomemo"])
        try #require(purgeStatus == 0, "dpkg --purge: \(purgeErr)")
        #expect(!FileManager.default.fileExists(atPath: home), "dpkg --purge removes the home")
        #expect(!FileManager.default.fileExists(atPath: "/etc/photomemo"), "dpkg --purge removes the conffile")
        #expect(try sh(["/usr/bin/getent", "passwd", "photomemo"]).0 == 0, "the system user stays")
    }
}
