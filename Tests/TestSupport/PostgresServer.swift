import Foundation

/// A real PostgreSQL server for a test: started and stopped by the project's own
/// `scripts/postgres`, on a random loopback port, with a fresh cluster under /tmp (the
/// postgres user, which runs it when the tests run as root, must reach the folder).
public final class PostgresServer: @unchecked Sendable {
    public let dir: String
    public private(set) var port: Int
    /// The superuser's URL for the `postgres` database.
    public private(set) var url = ""

    /// Logins over TCP need it when set (the script's scram-sha-256 mode); trust otherwise.
    public let password: String?

    public init(password: String? = nil) throws {
        self.password = password
        dir = "/tmp/pm-pg-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        port = Self.randomPort()
        // A random port can be taken (another test run on the machine): try others.
        for attempt in 1...3 {
            do { try start(); return } catch where attempt < 3 {
                port = Self.randomPort()
            }
        }
    }

    static func randomPort() -> Int { Int.random(in: 40_001...60_000) }

    deinit { shutdown() }

    /// Stops at once (throwaway data) and removes the folder. Call it when done rather than
    /// counting on deinit: a closure that captured the server (a Thread's) can keep it
    /// alive until the test process is already exiting, and the server would outlive it.
    public func shutdown() {
        _ = Self.script(["stop", dir, "now"])
        try? FileManager.default.removeItem(atPath: dir)
    }

    public func start() throws {
        let (status, out, err) = Self.script(["start", dir, String(port)] + (password.map { [$0] } ?? []))
        guard status == 0 else { throw Failure("PostgreSQL did not start: \(err) \(out)") }
        url = out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `now`: immediate shutdown (like a crash: sessions cut at once); otherwise fast.
    public func stop(now: Bool = false) { _ = Self.script(now ? ["stop", dir, "now"] : ["stop", dir]) }

    /// Stops and starts on the same port and cluster: an outage for reconnect tests.
    public func restart() throws {
        stop()
        try start()
    }

    /// A new empty database; returns its URL.
    public func createDatabase(_ name: String) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/psql")
        p.arguments = [url, "-v", "ON_ERROR_STOP=1", "-q", "-c", "CREATE DATABASE \"\(name)\""]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw Failure("CREATE DATABASE \(name) failed") }
        return url(database: name)
    }

    /// The superuser's URL for another database on this server.
    public func url(database: String) -> String {
        String(url[...url.lastIndex(of: "/")!]) + database
    }

    static func script(_ args: [String]) -> (Int32, String, String) { projectScript("scripts/postgres", args) }

}

extension PostgresServer {
    /// One server for a whole test process (each test takes a database of its own);
    /// stopped at exit, since a static is never deinitialised.
    public static let shared: PostgresServer = {
        let s = try! PostgresServer()
        atexit { PostgresServer.shared.shutdown() }
        return s
    }()

    /// A fresh database on the shared server; returns its URL.
    public static func freshDatabase(_ test: String = #function) throws -> String {
        let name = "t_" + test.prefix(while: { $0 != "(" }).lowercased().prefix(40) + "_\(UInt32.random(in: 0...UInt32.max))"
        return try shared.createDatabase(name)
    }
}
