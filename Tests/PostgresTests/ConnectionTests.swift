import Foundation
import Synchronization
import Postgres
import TestSupport
import Testing

@Suite struct ConnectionTests {
    @Test func everyValueKindRoundTrips() throws {
        let db = try PostgresConnection(url: Shared.database())
        let allBytes = (0...255).map { UInt8($0) }
        let values: [PostgresValue] = [
            .int(0), .int(Int64.min), .int(Int64.max), .int(-42),
            .double(0.1), .double(-1e300), .double(.leastNonzeroMagnitude), .double(.infinity), .double(-.infinity),
            .text(""), .text("plain"), .text("quotes ' \" \\ and $1; -- not SQL"), .text("ünïcødé 📷 日本"),
            .bytea([]), .bytea([0, 0, 0]), .bytea(allBytes), .bytea([0xff, 0xfe, 0x00, 0xc3, 0x28]),
        ]
        for v in values {
            let row = try #require(try db.queryOne("SELECT $1", [v]))
            #expect(row[0] == v, "\(v)")
        }
        let nan = try #require(try db.queryOne("SELECT $1", [.double(.nan)])?.double(0))
        #expect(nan.isNaN)
        // NULL of each kind, typed by a cast or a column.
        for cast in ["bigint", "double precision", "text", "bytea"] {
            #expect(try db.queryOne("SELECT $1::\(cast)", [.null])?.isNull(0) == true)
        }

        try db.exec("CREATE TABLE t(i integer, s smallint, b bigint, f real, d double precision, n numeric, x text, y bytea, z boolean, j jsonb, ts timestamptz)")
        let inserted = try db.run("INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11)",
                                  [7, 3, .int(1 << 40), 1.5, 2.25, .text("12.5"), "x", .bytea(allBytes), .text("true"), .text(#"{"a": 1}"#), .text("2026-12-01 10:00:00+00")])
        #expect(inserted == 1)
        try db.run("INSERT INTO t VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)")
        let rows = try db.query("SELECT i, s, b, f, d, n, x, y, z, j->>'a', extract(epoch FROM ts)::bigint FROM t ORDER BY i NULLS LAST")
        #expect(rows.count == 2)
        let r = rows[0]
        #expect(r.int(0) == 7 && r.int(1) == 3 && r.int(2) == 1 << 40)
        #expect(r.double(3) == 1.5 && r.double(4) == 2.25 && r.double(5) == 12.5)
        #expect(r.string(6) == "x" && r.bytes(7) == allBytes && r.bool(8) == true)
        #expect(r.string(9) == "1" && r.int(10) == 1_796_119_200)
        #expect(r["x"] == .text("x") && r.columns.first == "i")
        #expect(rows[1].values.allSatisfy { $0 == .null })
    }

    /// Statements are prepared once per session: they answer like unprepared ones, after
    /// another session changes a table under them (a daemon migrating), after a failed
    /// statement inside a transaction, and after a reconnect (a new session has none).
    @Test func preparedStatementsSurviveASchemaChangeAnAbortedTransactionAndAReconnect() throws {
        let url = try Shared.database()
        let db = try PostgresConnection(url: url), other = try PostgresConnection(url: url)
        try db.exec("CREATE TABLE p(a integer); INSERT INTO p VALUES (1)")
        for _ in 0..<6 { #expect(try db.query("SELECT * FROM p WHERE a = $1", [1]).first?.values == [.int(1)]) }
        #expect(try db.queryOne("SELECT count(*) FROM pg_prepared_statements")?.int(0) == 2)  // this one and the count
        try other.exec("ALTER TABLE p ADD COLUMN b text DEFAULT 'x'")
        #expect(try db.query("SELECT * FROM p WHERE a = $1", [1]).first?.values == [.int(1), .text("x")])
        #expect(try db.query("SELECT * FROM p WHERE a = $1", [1]).first?.values == [.int(1), .text("x")])
        #expect(throws: PostgresError.self) {
            try db.transaction {
                _ = try db.run("INSERT INTO p(a) VALUES ($1)", [.text("not a number")])
            }
        }
        #expect(try db.query("SELECT a FROM p WHERE a = $1", [1]).count == 1)
        #expect(try db.queryOne("SHOW jit")?.string(0) == "off")
        try other.exec("SELECT pg_terminate_backend(\(db.backendPID))")
        #expect(throws: PostgresError.self) { try db.query("SELECT * FROM p WHERE a = $1", [1]) }
        try db.reconnect()
        #expect(try db.query("SELECT * FROM p WHERE a = $1", [1]).first?.values == [.int(1), .text("x")])
    }

    @Test func textWithNULIsRefusedBeforeSending() throws {
        let db = try PostgresConnection(url: Shared.database())
        #expect { try db.query("SELECT $1", [.text("a\u{0}b")]) } throws: { ($0 as? PostgresError)?.kind == .query }
        #expect(try db.queryOne("SELECT 1")?.int(0) == 1)
    }

    @Test func uniqueViolationCarriesItsSQLState() throws {
        let db = try PostgresConnection(url: Shared.database())
        try db.exec("CREATE TABLE k(id text PRIMARY KEY); INSERT INTO k VALUES ('a')")
        let e = try #require(throws: PostgresError.self) { try db.run("INSERT INTO k VALUES ($1)", ["a"]) }
        #expect(e.kind == .query && e.sqlState == "23505" && e.isUniqueViolation && !e.isUnavailable)
        let syntax = try #require(throws: PostgresError.self) { try db.exec("SELEKT 1") }
        #expect(syntax.kind == .query && syntax.sqlState == "42601")
        #expect(db.isConnected)
        #expect(try db.run("UPDATE k SET id = 'b' WHERE id = 'zzz'") == 0)
    }

    @Test func transactionRollsBackWhenItsBodyThrows() throws {
        let db = try PostgresConnection(url: Shared.database())
        try db.exec("CREATE TABLE k(id integer PRIMARY KEY)")
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try db.transaction {
                try db.run("INSERT INTO k VALUES (1)")
                throw Boom()
            }
        }
        #expect(!db.inTransaction)
        // A failed statement whose error the body swallows: the server rolls back at COMMIT.
        let e = try #require(throws: PostgresError.self) {
            try db.transaction {
                try db.run("INSERT INTO k VALUES (2)")
                _ = try? db.run("INSERT INTO k VALUES (2)")
            }
        }
        #expect(e.sqlState == "25P02")
        let n = try db.transaction { () throws -> Int in
            try db.run("INSERT INTO k SELECT generate_series(10, 14)")
        }
        #expect(n == 5)
        // Nesting is refused; the outer transaction carries on.
        try db.transaction {
            let inner = try #require(throws: PostgresError.self) { try db.transaction { try db.run("INSERT INTO k VALUES (3)") } }
            #expect(inner.sqlState == "25001")
            #expect(db.inTransaction)
        }
        #expect(try db.queryOne("SELECT count(*), min(id) FROM k").map { [$0.int(0), $0.int(1)] } == [5, 10])
    }

    @Test func theURLsOwnOptionsWinOverTheDefaults() throws {
        let url = try Shared.database()
        let plain = try PostgresConnection(url: url)
        #expect(try plain.queryOne("SELECT current_setting('application_name')")?.string(0) == "photomemo")
        let named = try PostgresConnection(url: url + "?application_name=worker-2", applicationName: "ignored")
        #expect(try named.queryOne("SELECT current_setting('application_name')")?.string(0) == "worker-2")
    }

    @Test func unknownDatabaseIsRejectedNotUnavailable() throws {
        let url = PostgresServer.shared.url(database: "no_such_db")
        let e = try #require(throws: PostgresError.self) { try PostgresConnection(url: url) }
        #expect(e.kind == .rejected && e.message.contains("no_such_db"), "\(e)")
    }

    @Test func skipLockedClaimsNeverOverlap() throws {
        let url = try Shared.database()
        let setup = try PostgresConnection(url: url)
        try setup.exec("CREATE TABLE jobs(id integer PRIMARY KEY, owner integer)")
        try setup.run("INSERT INTO jobs(id) SELECT generate_series(1, 300)")
        let claim = "SELECT id FROM jobs WHERE owner IS NULL ORDER BY id LIMIT 7 FOR UPDATE SKIP LOCKED"

        // Held claim: the other connection skips those rows at once rather than waiting.
        let a = try PostgresConnection(url: url), b = try PostgresConnection(url: url)
        try a.exec("BEGIN")
        let heldA = try a.query(claim).compactMap { $0.int(0) }
        let heldB = try b.transaction { try b.query(claim).compactMap { $0.int(0) } }
        try a.exec("ROLLBACK")
        #expect(heldA == Array(1...7) && heldB == Array(8...14))

        // Racing claimers take every row exactly once.
        let claimed = Mutex<[Int: [Int64]]>([:])
        let failures = Mutex<[String]>([])
        onThreads(3) { worker in
            do {
                let c = try PostgresConnection(url: url)
                while true {
                    let ids = try c.transaction { () throws -> [Int64] in
                        let ids = try c.query(claim).compactMap { $0.int(0) }
                        for id in ids { try c.run("UPDATE jobs SET owner = $1 WHERE id = $2", [.int(Int64(worker)), .int(id)]) }
                        return ids
                    }
                    if ids.isEmpty { break }
                    claimed.withLock { $0[worker, default: []] += ids }
                }
            } catch { failures.withLock { $0.append("\(error)") } }
        }
        #expect(failures.withLock { $0 } == [])
        let all = claimed.withLock { $0.values.flatMap { $0 } }
        #expect(all.count == 300 && Set(all).count == 300)
    }
}
