import Foundation
import Postgres
import Testing
import TestSupport

/// A server of its own: stopping it must not disturb the other suites.
@Suite(.serialized) struct OutageTests {
    @Test func aStoppedServerIsAnOutageAndReconnectWorksAfterRestart() throws {
        let server = try PostgresServer()
        let db = try PostgresConnection(url: server.url)
        try db.exec("CREATE TABLE k(id integer)")
        try db.listen("wake")

        server.stop()
        let e = try #require(throws: PostgresError.self) { try db.query("SELECT 1") }
        #expect(e.kind == .unavailable, "\(e)")
        #expect(!db.isConnected)
        let down = try #require(throws: PostgresError.self) { try db.reconnect() }
        #expect(down.kind == .unavailable, "\(down)")
        let fresh = try #require(throws: PostgresError.self) { try PostgresConnection(url: server.url) }
        #expect(fresh.kind == .unavailable, "\(fresh)")

        try server.start()
        try db.reconnect()
        #expect(db.isConnected)
        #expect(try db.run("INSERT INTO k VALUES (1)") == 1)
        // The LISTEN was renewed on the new session.
        let sender = try PostgresConnection(url: server.url)
        try sender.notify("wake", "again")
        #expect(waitReadable(db.socket, ms: 5000))
        try db.consumeInput()
        #expect(db.drainNotifications().map(\.payload) == ["again"])

        // Killed rather than shut down (immediate mode): also an outage, on the listener too.
        server.stop(now: true)
        #expect(waitReadable(db.socket, ms: 5000))
        let killed = try #require(throws: PostgresError.self) { try db.consumeInput(); _ = try db.query("SELECT 1") }
        #expect(killed.kind == .unavailable, "\(killed)")
        try server.restart()
        try db.reconnect()
        #expect(try db.queryOne("SELECT count(*) FROM k")?.int(0) == 1)
    }
}
