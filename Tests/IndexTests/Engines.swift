import Foundation
import Postgres
import SQLite
import TestSupport
import Testing
@testable import Index
import StageKit

/// The engines the index suites run on: a SQLite file, and PostgreSQL on a real
/// throwaway server (TestSupport's PostgresServer).
enum Engine: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }
}

/// A fresh, empty store on `engine` for `body`: a new SQLite file, or a new database on
/// the test process's shared PostgreSQL server.
func withStore<T>(_ engine: Engine, test: String = #function, _ body: (RecordStore) throws -> T) throws -> T {
    switch engine {
    case .sqlite: return try body(tempStore())
    case .postgres: return try body(postgresStore(url: PostgresServer.freshDatabase(test)))
    }
}

/// A store on the database at `url` (several of them on one: daemons sharing it).
func postgresStore(url: String) throws -> RecordStore {
    try RecordStore(connection: PostgresDatabase(url: url), path: url, reader: { try PostgresDatabase(url: url) })
}

extension RecordStore {
    /// The due deliveries as a deliverer would claim them, claimed and released again
    /// (a look, not a send).
    func dueDeliveries(limit: Int) throws -> [OutboxDelivery] {
        let due = try claimDueDeliveries(limit: limit, claimant: "look", until: unixNow() + 60, now: unixNow())
        try releaseDeliveryClaims(of: "look", ids: nil)
        return due
    }
}
