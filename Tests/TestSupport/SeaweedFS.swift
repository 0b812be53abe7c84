import Foundation

/// A real S3-compatible server for a test: SeaweedFS started and stopped by the project's
/// own `scripts/seaweedfs`, on a random loopback port, with a fresh data folder.
public final class SeaweedFS: @unchecked Sendable {
    public let dir: String
    public private(set) var port: Int
    public let accessKey = "photomemo-test"
    public let secretKey = "photomemo-secret-\(UInt32.random(in: 0...UInt32.max))"
    public let bucket = "photos"
    public private(set) var endpoint = ""

    public init() throws {
        dir = NSTemporaryDirectory() + "pm-s3-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        port = Self.randomPort()
        // A random port block can be taken (another test run on the machine): try others.
        for attempt in 1...3 {
            do { try start(); return } catch where attempt < 3 {
                _ = Self.script(["stop", dir, "now"])
                try? FileManager.default.removeItem(atPath: dir)
                port = Self.randomPort()
            }
        }
    }

    static func randomPort() -> Int { Int.random(in: 20_000...40_000) / 16 * 16 }

    deinit {
        _ = Self.script(["stop", dir, "now"])  // throwaway data: no need to wait for a clean exit
        try? FileManager.default.removeItem(atPath: dir)
    }

    public func start() throws {
        let (status, out, err) = Self.script(["start", dir, String(port), accessKey, secretKey, bucket])
        guard status == 0 else { throw Failure("SeaweedFS did not start: \(err) \(out)") }
        endpoint = out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public func stop() { _ = Self.script(["stop", dir]) }

    public var storeURL: String { "s3://\(bucket)/pm?endpoint=\(endpoint)&region=us-east-1" }
    public var environment: [String: String] { ["AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey] }

    /// GETs an object with curl's own SigV4 signing: an independent S3 client.
    public func fetchWithCurl(_ key: String) -> Data? {
        let out = dir + "/fetched-\(UInt32.random(in: 0...UInt32.max))"
        defer { unlink(out) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = ["-s", "-f", "-o", out, "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", "\(accessKey):\(secretKey)",
                       "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "\(endpoint)/\(bucket)/\(key)"]
        try? p.run()
        p.waitUntilExit()
        return p.terminationStatus == 0 ? FileManager.default.contents(atPath: out) : nil
    }

    static func script(_ args: [String]) -> (Int32, String, String) { projectScript("scripts/seaweedfs", args) }

}
