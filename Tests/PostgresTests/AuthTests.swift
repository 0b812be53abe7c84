import Foundation
import Postgres
import Testing
import TestSupport

/// Passwords are libpq's business (PGPASSWORD, ~/.pgpass): a URL needs none, and a
/// refused login is configuration, not an outage.
@Suite struct AuthTests {
    @Test func aPasswordComesFromThePassfileAndAMissingOneIsRejected() throws {
        let server = try PostgresServer(password: "pm-\(UInt32.random(in: 0...UInt32.max))")
        defer { server.shutdown() }
        let none = try #require(throws: PostgresError.self) { try PostgresConnection(url: server.url + "?passfile=/nonexistent") }
        #expect(none.kind == .rejected, "\(none)")
        let wrong = try #require(throws: PostgresError.self) {
            try PostgresConnection(url: server.url.replacingOccurrences(of: "postgres@", with: "postgres:wrong@"))
        }
        #expect(wrong.kind == .rejected, "\(wrong)")

        // ~/.pgpass format, in a file of our own (libpq ignores one others may read).
        let passfile = server.dir + "/pgpass"
        try "127.0.0.1:\(server.port):*:postgres:\(server.password!)\n".write(toFile: passfile, atomically: true, encoding: .utf8)
        chmod(passfile, 0o600)
        let db = try PostgresConnection(url: server.url + "?passfile=\(passfile)")
        #expect(try db.queryOne("SELECT current_user")?.string(0) == "postgres")
    }
}
