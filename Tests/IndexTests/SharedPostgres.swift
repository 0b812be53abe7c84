#if canImport(Postgres)
import Foundation
import Postgres
import TestSupport

/// One PostgreSQL server for the index suites running at once, a database per store;
/// stopped (explicitly: deinit at exit is too late) when the last user is done.
final class SharedPostgres: @unchecked Sendable {
    static let shared = SharedPostgres()
    // Safe: both only touched with `lock` held.
    private let lock = NSLock()
    private var server: PostgresServer?
    private var users = 0
    private var databases = 0

    func withDatabase<T>(_ body: (String) throws -> T) throws -> T {
        let url = try acquire()
        defer { release() }
        return try body(url)
    }

    private func acquire() throws -> String {
        lock.lock()
        defer { lock.unlock() }
        if server == nil { server = try PostgresServer() }
        users += 1
        databases += 1
        do {
            return try server!.createDatabase("index_\(databases)")
        } catch {
            users -= 1
            stopIfUnused()
            throw error
        }
    }

    private func release() {
        lock.lock()
        defer { lock.unlock() }
        users -= 1
        stopIfUnused()
    }

    private func stopIfUnused() {
        guard users == 0 else { return }
        server?.shutdown()
        server = nil
    }
}
#endif
