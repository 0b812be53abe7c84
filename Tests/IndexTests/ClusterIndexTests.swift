import Foundation
import StageKit
import TestSupport
import Testing
@testable import Index

/// Several daemons on one PostgreSQL index. Writes take one advisory lock, so change seqs
/// commit in order: a follower reading `since` its last seq never misses one, and
/// creation order (`ord`) is the create changes' order.
@Suite struct ClusterIndexTests {
    @Test func twoWritingDaemonsAndAFollowerSeeEveryChangeInCommitOrder() throws {
        let url = try PostgresServer.freshDatabase()
        let writers = try (0..<2).map { _ in try postgresStore(url: url) }
        let follower = try postgresStore(url: url)
        let perWriter = 60
        let seen = LockedValue<[Int64]>([])
        let errors = LockedValue<[String]>([])
        let started = Date()
        DispatchQueue.concurrentPerform(iterations: 3) { i in
            do {
                if i < 2 {
                    for n in 0..<perWriter {
                        _ = try writers[i].apply(input("w\(i)-\(n)", memo: "from \(i)", fields: ["n": .int(Int64(n))]))
                    }
                    return
                }
                var last: Int64 = 0
                while seen.value.count < 2 * perWriter, Date().timeIntervalSince(started) < 60 {
                    for c in try follower.changes(since: last, limit: 7, viewer: .admin) {
                        seen.withLock { $0.append(c.seq) }
                        last = c.seq
                    }
                }
            } catch {
                errors.withLock { $0.append("\(i): \(error)") }
            }
        }
        #expect(errors.value.isEmpty, "\(errors.value)")
        let all = try follower.changes(since: 0, limit: 1000, viewer: .admin)
        #expect(all.count == 2 * perWriter)
        #expect(seen.value == all.map(\.seq))  // nothing committed behind the follower's back
        let records = try follower.query(.always, limit: 1000, viewer: .admin).records
        #expect(records.map(\.id) == all.map(\.recordID))
        #expect(records.map(\.changeTag) == all.map { String($0.seq) })
    }
}
