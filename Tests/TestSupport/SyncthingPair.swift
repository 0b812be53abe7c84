import Foundation

/// Two real Syncthing instances for a test, started and stopped by `scripts/syncthing`: a
/// "phone" sharing `phoneFolder` send-only and a "server" receiving it into `serverFolder`
/// receive-only, on loopback, no discovery or relays, each knowing the other by device ID.
public final class SyncthingPair: @unchecked Sendable {
    public let dir: String
    public let phoneFolder: String
    public let serverFolder: String
    public private(set) var port: Int
    private var urls: [String] = []
    private var apiKey = ""

    /// `serverFolder` must exist (it may be a daemon's inbox); `phoneFolder` is made if missing.
    public init(phoneFolder: String, serverFolder: String) throws {
        _ = try realTool("syncthing", package: "syncthing")
        _ = try realTool("curl", package: "curl")
        self.phoneFolder = phoneFolder
        self.serverFolder = serverFolder
        dir = NSTemporaryDirectory() + "pm-syncthing-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        port = Self.randomPort()
        // A random port block can be taken (another test run on the machine): try others.
        for attempt in 1...3 {
            do { try start(); return } catch where attempt < 3 {
                _ = Self.script(["stop", dir])
                port = Self.randomPort()
            }
        }
    }

    static func randomPort() -> Int { Int.random(in: 20_000...40_000) / 4 * 4 }

    deinit {
        _ = Self.script(["stop", dir])
        try? FileManager.default.removeItem(atPath: dir)
    }

    func start() throws {
        let (status, out, err) = Self.script(["start", dir, String(port), phoneFolder, serverFolder])
        let words = out.split(whereSeparator: \.isWhitespace).map(String.init)
        guard status == 0, words.count == 3 else { throw Failure("Syncthing did not start: \(err) \(out)") }
        urls = Array(words[0..<2])
        apiKey = words[2]
    }

    public enum Instance: Int { case phone = 0, server = 1 }

    /// One REST call (curl, with the API key): the body, or nil when it did not answer 2xx.
    @discardableResult
    public func rest(_ instance: Instance, _ method: String, _ path: String) -> String? {
        let r = try? runTool(["/usr/bin/env", "curl", "-s", "-f", "-m", "5", "-X", method, "-H", "X-API-Key: \(apiKey)", urls[instance.rawValue] + path])
        return r?.0 == 0 ? r?.1 : nil
    }

    /// Asks the phone to scan its folder now (not waiting for its watcher's delay).
    public func scanPhone() { rest(.phone, "POST", "/rest/db/scan?folder=photos") }

    /// The two logs, for a failed test's message.
    public var logs: String {
        ["phone", "server"].map { "\($0): " + String(((try? String(contentsOfFile: dir + "/\($0).log", encoding: .utf8)) ?? "").suffix(1500)) }
            .joined(separator: "\n")
    }

    static func script(_ args: [String]) -> (Int32, String, String) { projectScript("scripts/syncthing", args) }
}
