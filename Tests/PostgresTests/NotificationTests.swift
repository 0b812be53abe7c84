import Foundation
import EventLoop
import Postgres
import Testing

@Suite struct NotificationTests {
    @Test func notifyFromOneConnectionIsDrainedOnTheListener() throws {
        let url = try Shared.database()
        let listener = try PostgresConnection(url: url), sender = try PostgresConnection(url: url)
        try listener.listen("Jobs.Ready")  // case and dots kept: quoted, like pg_notify's name
        try sender.notify("Jobs.Ready", "job 1 ✓")
        #expect(waitReadable(listener.socket, ms: 5000))
        try listener.consumeInput()
        let got = listener.drainNotifications()
        #expect(got == [PostgresNotification(channel: "Jobs.Ready", payload: "job 1 ✓", pid: sender.backendPID)])
        #expect(listener.drainNotifications().isEmpty)

        // Inside a transaction: sent at COMMIT, not before, and not at all on ROLLBACK.
        #expect(throws: CancellationError.self) {
            try sender.transaction {
                try sender.notify("Jobs.Ready", "rolled back")
                throw CancellationError()
            }
        }
        try sender.transaction { try sender.notify("Jobs.Ready", "committed") }
        // A query on the listening connection collects what arrived with its answer.
        let deadline = Date().addingTimeInterval(5)
        var later: [PostgresNotification] = []
        while later.isEmpty && Date() < deadline {
            _ = try listener.query("SELECT 1")
            later += listener.drainNotifications()
        }
        #expect(later.map(\.payload) == ["committed"])

        try listener.unlisten("Jobs.Ready")
        try sender.notify("Jobs.Ready", "unheard")
        #expect(!waitReadable(listener.socket, ms: 200))
    }
}

/// The daemon's pattern: the listener's socket polled on the loop thread, sends elsewhere.
@Suite(.serialized) struct NotificationPollTests {
    @Test func notificationsWakeALoopPollingTheListenersSocket() throws {
        let url = try Shared.database()
        let listener = try PostgresConnection(url: url)
        try listener.listen("work")
        let loop = try EventLoop()
        let poll = try SocketPoll(loop: loop, fd: listener.socket)
        let giveUp = try LoopTimer(loop: loop)
        var payloads: [String] = []
        var failure: Error?
        func finish() { poll.close(); giveUp.close() }
        try poll.start { error in
            if let error { failure = error; return finish() }
            do {
                try listener.consumeInput()
                payloads += listener.drainNotifications().map(\.payload)
            } catch { failure = error; return finish() }
            if payloads.count == 3 { finish() }
        }
        giveUp.start(afterMs: 10_000) { finish() }
        // libpq may already hold notifications read with an earlier answer: drain once.
        payloads += listener.drainNotifications().map(\.payload)
        Thread.detachNewThread {
            let sender = try! PostgresConnection(url: url)
            for i in 1...3 { try! sender.notify("work", "n\(i)") }
        }
        loop.run()
        #expect(failure == nil)
        #expect(payloads == ["n1", "n2", "n3"])
        #expect(loop.close() == 0)
    }
}
