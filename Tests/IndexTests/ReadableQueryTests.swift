import Foundation
import SQL
import Testing
@testable import Index

/// A user's query walks only the records they may read (issue 24, item 1): its plan
/// starts from their `record_readers` rows and reaches `records` and the field rows only by
/// record id, never through an index over every owner's values — so what it costs cannot
/// tell them whether someone else's record matches.
@Suite struct ReadableQueryTests {
    static let predicates = [#"secret == "S3cr3t-XYZ""#, #"ssn BEGINSWITH "12""#, #"memo CONTAINS "payroll""#, "n >= 10 AND n <= 20",
                             #"secret IN {"a", "S3cr3t-XYZ"}"#, #"NOT (secret == "x") OR tags CONTAINS "t""#, "TRUEPREDICATE"]
    /// Indexes whose rows are every owner's (a user's query must not walk them).
    static let everyOwnersIndexes = ["records_fts", "record_fields_text", "record_fields_num", "record_fields_refs", "records_type",
                                     "records_created", "records_owner", "records_ord", "records_photo"]

    @Test(arguments: Engine.allCases) func aUsersQueryPlanStartsFromTheRecordsTheyMayRead(_ engine: Engine) throws {
        try withStore(engine) { s in
            _ = try s.apply(batch: (0..<2000).map {
                input("v\($0)", type: "Secret", memo: "payroll note", fields: ["secret": "S3cr3t-XYZ", "ssn": "123-45-6789", "n": .int(Int64($0 % 40))],
                      owner: "victim")
            })
            _ = try s.apply(batch: (0..<5).map { input("m\($0)", memo: "mine", fields: ["secret": "mine", "n": .int(Int64($0))], owner: "mallory") })
            if engine == .postgres { try s.db.exec("ANALYZE") }
            for p in Self.predicates {
                for (type, sort) in [(nil, ""), ("Secret", "-n,secret")] {
                    let q = try s.querySQL(PredicateParser.parse(p), type: type, sort: SortKey.parse(sort), cursor: nil, viewer: .user("mallory"))
                    let params = q.selectParams + q.params + q.orderParams + [.int(100)]
                    let plan = engine == .sqlite
                        ? try s.db.query("EXPLAIN QUERY PLAN " + q.sql, params).compactMap { $0.string(3) }
                        : try s.db.query("EXPLAIN " + q.sql, params).compactMap { $0.string(0) }
                    let text = plan.joined(separator: "\n")
                    for index in Self.everyOwnersIndexes { #expect(!text.contains(index), "\(p) --type \(type ?? "-"): \(text)") }
                    if engine == .sqlite {
                        // Readers first, then each record by id; field and token rows by record id.
                        let readers = plan.firstIndex { $0.contains("record_readers") && $0.contains("(reader=?)") }
                        let records = plan.firstIndex { $0.hasPrefix("SEARCH r ") && $0.contains("(id=?)") }
                        #expect(readers != nil && records != nil && readers! < records!, "\(p): \(text)")
                        #expect(!plan.contains { $0.hasPrefix("SCAN r") || $0.hasPrefix("SCAN record_") }, "\(p): \(text)")
                        #expect(plan.filter { $0.contains("record_fields") || $0.contains("record_tokens") }
                            .allSatisfy { $0.contains("(record_id=") }, "\(p): \(text)")
                    } else {
                        let readers = text.range(of: "Index Only Scan using record_readers_pkey on record_readers")
                        let records = text.range(of: "Index Scan using records_pkey on records r0")
                        #expect(readers != nil && records != nil && readers!.lowerBound < records!.lowerBound, "\(p): \(text)")
                        #expect(!text.contains("Seq Scan") && !text.contains("Hash Join") && !text.contains("Semi Join"), "\(p): \(text)")
                    }
                }
            }
        }
    }
}

extension ReadableQueryTests {
    /// A subscription's predicate is tested on the changed record alone (a change made over
    /// the socket fans out inside its write, so the cost would show in its writer's reply):
    /// by record id, never through an index over every owner's values.
    @Test(arguments: Engine.allCases) func aSubscriptionTestsTheChangedRecordOnItsOwnRows(_ engine: Engine) throws {
        try withStore(engine) { s in
            _ = try s.apply(batch: (0..<2000).map {
                input("v\($0)", type: "Secret", memo: "payroll note", fields: ["secret": "S3cr3t-XYZ", "ssn": "123-45-6789", "n": .int(Int64($0 % 40))],
                      owner: "victim")
            })
            let (mine, _) = try s.apply(input("m", memo: "mine", fields: ["secret": "mine"], owner: "mallory"))
            if engine == .postgres { try s.db.exec("ANALYZE") }
            for p in Self.predicates {
                let (sql, params) = s.matchSQL(try PredicateParser.parse(p), recordID: mine.id)
                let plan = (engine == .sqlite
                    ? try s.db.query("EXPLAIN QUERY PLAN " + sql, params).compactMap { $0.string(3) }
                    : try s.db.query("EXPLAIN " + sql, params).compactMap { $0.string(0) }).joined(separator: "\n")
                for index in Self.everyOwnersIndexes { #expect(!plan.contains(index), "\(p): \(plan)") }
                #expect(!plan.contains("SCAN record_") && !plan.contains("Seq Scan"), "\(p): \(plan)")
            }
        }
    }
}
