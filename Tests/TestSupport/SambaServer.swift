import Foundation

/// A Samba server on 127.0.0.1 started by `scripts/samba` (its own config, state and
/// password database in a temporary folder), sharing one folder as `//127.0.0.1/inbox`;
/// `user` logs in, and what it writes is that user's. Stopped when released.
public final class SambaServer: @unchecked Sendable {
    public let dir: String
    public private(set) var port: Int
    public let share = "//127.0.0.1/inbox"

    public init(sharing path: String, user: String) throws {
        _ = try realTool("smbd", package: "samba")
        _ = try realTool("smbclient", package: "smbclient")
        dir = NSTemporaryDirectory() + "pm-samba-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        port = Self.randomPort()
        // A random port can be taken (another test run on the machine): try others.
        for attempt in 1...3 {
            let (status, out, err) = Self.script(["start", dir, String(port), path, user])
            if status == 0 { return }
            _ = Self.script(["stop", dir])
            guard attempt < 3 else { throw Failure("smbd did not start: \(err) \(out)") }
            port = Self.randomPort()
        }
    }

    static func randomPort() -> Int { Int.random(in: 20_000...40_000) }

    deinit {
        _ = Self.script(["stop", dir])
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// `smbclient` logged in to the share, running `commands` (`put`, `mput`...).
    public func client(_ commands: String) throws -> [String] {
        [try realTool("smbclient", package: "smbclient"), "-s", dir + "/smb.conf", "-p", String(port), "-A", dir + "/auth", share, "-c", commands]
    }

    static func script(_ args: [String]) -> (Int32, String, String) { projectScript("scripts/samba", args) }
}
