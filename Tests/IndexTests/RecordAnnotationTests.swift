import Foundation
import StageKit
import Testing
@testable import Index

/// A job's annotations (`RecordInput.annotations`) are typed fields of its record where no
/// memo gave one of that name, on both engines: queryable by type, never over a memo's
/// field nor, on an update, over one the record has.
@Suite struct RecordAnnotationTests {
    @Test(arguments: Engine.allCases) func annotationsAreTypedFieldsThatNeverOverrideAMemos(_ engine: Engine) throws {
        try withStore(engine) { (s: RecordStore) throws -> Void in
            let sha = String(repeating: "c", count: 64)
            var first = input("k1", fields: ["text": "by hand"], sha: sha)
            first.annotations = ["text": "ocr", "pages": 3, "scanned": "2026-01-02T03:04:05Z", "words": ["SALE", "50%"]]
            #expect(try s.apply(first).op == "create")
            func ids(_ predicate: String) throws -> Int {
                try s.query(PredicateParser.parse(predicate), limit: 100, viewer: .admin).records.count
            }
            #expect(try ids(#"text == "by hand""#) == 1)
            #expect(try ids(#"text == "ocr""#) == 0)
            #expect(try ids("pages > 2 AND pages < 4") == 1)
            #expect(try ids(#"scanned BETWEEN {DATE("2026-01-01"), DATE("2026-01-03")}"#) == 1)
            #expect(try ids(#"words CONTAINS "SALE""#) == 1)
            // The same bytes again: an update; only a field the record lacks is added.
            var again = input("k2", sha: sha)
            again.annotations = ["pages": 9, "lang": "en"]
            #expect(try s.apply(again).op == "update")
            #expect(try ids("pages == 3") == 1)
            #expect(try ids(#"lang == "en" AND text == "by hand""#) == 1)
        }
    }
}
