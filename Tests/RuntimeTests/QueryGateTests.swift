import Testing
@testable import Runtime

/// One user's queries run one at a time, in order; nobody else waits on them.
@Suite struct QueryGateTests {
    final class Connection {}

    @Test func aUsersSecondQueryWaitsForTheirFirstAndNoOneElsesDoes() {
        let gate = QueryGate(perUser: 1)
        let mallory = Caller(uid: 60_001), alice = Caller(uid: 1), root = Caller(uid: 0)
        let c1 = Connection(), c2 = Connection(), c3 = Connection()
        var started: [String] = []
        var done: [String: () -> Void] = [:]
        func query(_ name: String, _ caller: Caller, _ conn: Connection) {
            gate.admit(caller, connection: conn) { finish in started.append(name); done[name] = finish }
        }
        query("m1", mallory, c1)
        query("m2", mallory, c2)
        query("m3", mallory, c1)
        query("a1", alice, c3)
        query("r1", root, c1)
        query("r2", root, c1)
        #expect(started == ["m1", "a1", "r1", "r2"])
        #expect(gate.counts(mallory.uid) == (1, 2))
        done["m1"]!()
        done["m1"]!()  // a second call changes nothing
        #expect(started == ["m1", "a1", "r1", "r2", "m2"])
        // A waiting query whose connection went away never runs.
        gate.disconnected(c1)
        done["m2"]!()
        #expect(started == ["m1", "a1", "r1", "r2", "m2"])
        #expect(gate.counts(mallory.uid) == (0, 0))
        query("m4", mallory, c2)
        #expect(started.last == "m4")
    }
}
