import Foundation
import SQLite
import Testing
#if canImport(Postgres)
import Postgres
#endif
@testable import Index

/// The engines the index suites run on: SQLite always, PostgreSQL on a real throwaway
/// server (TestSupport's PostgresServer) when the driver is built in.
enum Engine: String, Sendable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }

    static var all: [Engine] {
        #if canImport(Postgres)
        [.sqlite, .postgres]
        #else
        [.sqlite]
        #endif
    }
}

/// A fresh, empty store on `engine` for the length of `body`: a new SQLite file, or a new
/// database on the shared PostgreSQL server (stopped when no test uses it any more).
func withStore<T>(_ engine: Engine, _ body: (RecordStore) throws -> T) throws -> T {
    switch engine {
    case .sqlite:
        return try body(tempStore())
    case .postgres:
        #if canImport(Postgres)
        return try SharedPostgres.shared.withDatabase { url in
            try body(RecordStore(connection: PostgresDatabase(url: url), path: url))
        }
        #else
        throw Failure("PostgreSQL driver not built")
        #endif
    }
}

struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
