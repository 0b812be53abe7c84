import Foundation

/// A real OpenSSH server for a test: `scripts/sshd` on a random 127.0.0.1 port, with its
/// own host key and client key in a fresh folder; the test's user logs in as itself.
public final class SSHServer: @unchecked Sendable {
    public let dir: String
    public private(set) var port: Int
    /// The ssh_config the script wrote: `ssh -F config photomemo-test`.
    public private(set) var config = ""
    public let host = "photomemo-test"

    public init() throws {
        _ = try realTool("sshd", package: "openssh-server")
        _ = try realTool("ssh", package: "openssh-client")
        dir = NSTemporaryDirectory() + "pm-sshd-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        port = Self.randomPort()
        // A random port can be taken (another test run on the machine): try others.
        for attempt in 1...3 {
            do { try start(); return } catch where attempt < 3 {
                _ = Self.script(["stop", dir])
                port = Self.randomPort()
            }
        }
    }

    static func randomPort() -> Int { Int.random(in: 20_000...40_000) }

    deinit {
        _ = Self.script(["stop", dir])
        try? FileManager.default.removeItem(atPath: dir)
    }

    func start() throws {
        let (status, out, err) = Self.script(["start", dir, String(port)])
        guard status == 0 else { throw Failure("sshd did not start: \(err) \(out)") }
        config = out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The client command for rsync's `-e` and scp/sftp's arguments.
    public var ssh: [String] { ["ssh", "-F", config] }

    /// An rclone connection string for this server's sftp (rclone's own SSH client, with the
    /// same key and host key): `REMOTE/abs/path`.
    public var rcloneRemote: String {
        ":sftp,host=127.0.0.1,port=\(port),user=\(NSUserName()),key_file=\(dir)/client_key,known_hosts_file=\(dir)/known_hosts:"
    }

    static func script(_ args: [String]) -> (Int32, String, String) { projectScript("scripts/sshd", args) }
}
