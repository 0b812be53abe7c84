import Foundation
import EventLoop
import Postgres
import Testing
import TestSupport

/// A server of its own: stopping it must not disturb the other suites.
@Suite(.serialized) struct OutageTests {
    /// What the journal and the index hold: after the server is back, the next call (a
    /// transaction included) runs on a new session, and a transaction the outage cut fails.
    @Test func aPostgresDatabaseComesBackAfterARestart() throws {
        let server = try PostgresServer()
        defer { server.shutdown() }
        let db = try PostgresDatabase(url: server.url)
        try db.exec("CREATE TABLE k(id integer)")
        server.stop(now: true)
        #expect(throws: PostgresError.self) { try db.transaction { try db.run("INSERT INTO k VALUES (1)") } }
        try server.start()
        #expect(try db.transaction { try db.run("INSERT INTO k VALUES (2)") } == 1)
        #expect(try db.queryOne("SELECT count(*) FROM k")?.int(0) == 1)
    }

    @Test func aStoppedServerIsAnOutageAndReconnectWorksAfterRestart() throws {
        let server = try PostgresServer()
        defer { server.shutdown() }
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

@Suite(.serialized) struct ListenerOutageTests {
    /// libpq closes the socket itself when it finds the connection gone, inside
    /// consumeInput: the poll must be closed right there, before the descriptor is reused.
    @Test func aPolledListenerSeesTheServerGoAndClosesItsPoll() throws {
        let server = try PostgresServer()
        defer { server.shutdown() }
        let listener = try PostgresConnection(url: server.url)
        try listener.listen("wake")
        let loop = try EventLoop()
        let poll = try SocketPoll(loop: loop, fd: listener.socket)
        let giveUp = try LoopTimer(loop: loop)
        var outage: PostgresError?
        var wakeups = 0
        func finish() { poll.close(); giveUp.close() }
        try poll.start { _ in
            wakeups += 1
            do { try listener.consumeInput() } catch let e as PostgresError {
                outage = e
                finish()
            } catch { finish() }
        }
        giveUp.start(afterMs: 15_000) { finish() }
        Thread.detachNewThread { server.stop() }
        loop.run()
        #expect(outage?.kind == .unavailable, "\(String(describing: outage))")
        #expect(!listener.isConnected && listener.socket == -1)
        #expect(loop.close() == 0)

        try server.start()
        try listener.reconnect()
        #expect(listener.socket >= 0)
    }
}
