/// At most `perUser` queries of one user run at once; the rest wait their turn in order,
/// so a user looping expensive queries on many connections holds one pool thread and one
/// read of the index, not all of them (everyone else's requests and the pipeline's stages
/// share the pool). Admins are not held. A waiting query whose connection went away is
/// dropped. Loop thread only.
///
///     query ─▶ admit ─┬─ under perUser ─▶ start(done) ─ … ─ done() ─▶ next waiting, if any
///                     └─ at perUser ──▶ waiting[uid] (FIFO)
final class QueryGate {
    let perUser: Int
    private var running: [UInt32: Int] = [:]
    private var waiting: [UInt32: [(connection: ObjectIdentifier, start: (@escaping () -> Void) -> Void)]] = [:]

    init(perUser: Int) {
        precondition(perUser > 0)
        self.perUser = perUser
    }

    /// Runs `start` now or once one of `caller`'s running queries is done; `start` must
    /// call the `done` it is given exactly once, when its query has finished.
    func admit(_ caller: Caller, connection: AnyObject, _ start: @escaping (_ done: @escaping () -> Void) -> Void) {
        guard !caller.isAdmin else { return start {} }
        let uid = caller.uid
        guard running[uid, default: 0] < perUser else {
            waiting[uid, default: []].append((ObjectIdentifier(connection), start))
            return
        }
        begin(uid, start)
    }

    /// Drops the queries `connection` left waiting.
    func disconnected(_ connection: AnyObject) {
        let id = ObjectIdentifier(connection)
        for uid in Array(waiting.keys) {
            waiting[uid]!.removeAll { $0.connection == id }
            if waiting[uid]!.isEmpty { waiting[uid] = nil }
        }
    }

    /// One user's queries running and waiting (what the tests look at).
    func counts(_ uid: UInt32) -> (running: Int, waiting: Int) { (running[uid, default: 0], waiting[uid]?.count ?? 0) }

    private func begin(_ uid: UInt32, _ start: (@escaping () -> Void) -> Void) {
        running[uid, default: 0] += 1
        var finished = false
        start { [self] in
            guard !finished else { return }
            finished = true
            running[uid]! -= 1
            if running[uid] == 0 { running[uid] = nil }
            guard var queue = waiting[uid], !queue.isEmpty else { return }
            let next = queue.removeFirst()
            waiting[uid] = queue.isEmpty ? nil : queue
            begin(uid, next.start)
        }
    }
}
