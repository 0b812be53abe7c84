import Foundation
import StageKit
import Testing
@testable import Index

@Suite struct PredicateParserTests {
    @Test func parsesTheDesignExamples() throws {
        #expect(try PredicateParser.parse(#"salesPrice >= 100 AND salesPrice <= 500"#)
            == .and(.compare(key: "salesPrice", op: .ge, value: .number(100)), .compare(key: "salesPrice", op: .le, value: .number(500))))
        #expect(try PredicateParser.parse(#"address == "Tokyo""#) == .compare(key: "address", op: .eq, value: .string("Tokyo")))
        #expect(try PredicateParser.parse(#"name BEGINSWITH "A""#) == .beginsWith(key: "name", prefix: "A"))
        #expect(try PredicateParser.parse(#"memo CONTAINS "receipt""#) == .contains(key: "memo", value: .string("receipt")))
        #expect(try PredicateParser.parse(#"code IN {"A","B"}"#) == .oneOf(key: "code", values: [.string("A"), .string("B")]))
        #expect(try PredicateParser.parse(#"taken BETWEEN {DATE("2026-01-01"), DATE("2026-02-01")}"#)
            == .between(key: "taken", low: .date(1_767_225_600), high: .date(1_769_904_000)))
        #expect(try PredicateParser.parse("TRUEPREDICATE") == .always)
        #expect(try PredicateParser.parse(#"NOT (a == 1 OR b != false) AND c < -2.5"#)
            == .and(.not(.or(.compare(key: "a", op: .eq, value: .number(1)), .compare(key: "b", op: .ne, value: .bool(false)))),
                    .compare(key: "c", op: .lt, value: .number(-2.5))))
        // AND binds tighter than OR; keywords are case-insensitive.
        #expect(try PredicateParser.parse("a == 1 or b == 2 and c == 3")
            == .or(.compare(key: "a", op: .eq, value: .number(1)),
                   .and(.compare(key: "b", op: .eq, value: .number(2)), .compare(key: "c", op: .eq, value: .number(3)))))
    }

    @Test(arguments: [
        ("salesPrice >= ", "expected a value, found end of predicate", 15),
        ("salesPrice >> 3", "expected a value, found \">\"", 13),
        (#"name == "open"#, "unterminated string", 9),
        ("(a == 1", "expected \")\", found end of predicate", 8),
        ("a == 1 b == 2", "unexpected \"b\"", 8),
        ("a LIKE 3", "expected a comparison, BEGINSWITH, CONTAINS, IN or BETWEEN after \"a\", found \"LIKE\"", 3),
        ("a BETWEEN {1}", "BETWEEN needs {low, high}", 11),
        (#"t > DATE("yesterday")"#, "\"yesterday\" is not an ISO-8601 date", 10),
        ("a == 1; DROP TABLE records", "unexpected character \";\"", 7),
        ("== 3", "expected a field name, found \"==\"", 1),
    ])
    func malformedPredicatesSayWhatAndWhere(_ text: String, _ message: String, _ column: Int) {
        do {
            let p = try PredicateParser.parse(text)
            Issue.record("parsed \(p)")
        } catch let e as PredicateSyntaxError {
            #expect(e.message == message)
            #expect(e.column == column, "\(e)")
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test func sortDescriptors() throws {
        #expect(try SortKey.parse("-salesPrice,costRate") == [SortKey(key: "salesPrice", descending: true), SortKey(key: "costRate", descending: false)])
        #expect(try SortKey.parse("") == [])
        #expect(throws: PredicateSyntaxError.self) { try SortKey.parse("price; DROP") }
    }

    /// Found by fuzz-predicate (Fuzz/corpus/predicate/017): 39 sort keys, most of them
    /// empty, are the client's bad_request with the count, before any key is read.
    @Test func moreThan32SortKeysAreABadRequest() throws {
        #expect(throws: PhotomemoError(.badRequest, "sort: 39 keys; at most 32 may be given")) {
            try SortKey.parse(",,,,,,,,,,,,,22222222,,,,,,,,,,,,,,,,,,,,,,,,,-s(e")
        }
        #expect(try SortKey.parse((0..<32).map { "k\($0)" }.joined(separator: ",")).count == 32)
    }

    // MARK: hostile predicates (each once crashed the daemon or SQLite's parser)

    func syntaxError(_ text: String) -> PredicateSyntaxError? {
        do { _ = try PredicateParser.parse(text); return nil } catch { return error as? PredicateSyntaxError }
    }

    /// How deep a parsed tree nests (iteratively: the tree under test may be deep).
    func depth(_ p: RecordPredicate) -> Int {
        var deepest = 0
        var stack = [(p, 1)]
        while let (q, d) = stack.popLast() {
            deepest = max(deepest, d)
            switch q {
            case .not(let a): stack.append((a, d + 1))
            case .and(let a, let b), .or(let a, let b): stack += [(a, d + 1), (b, d + 1)]
            default: break
            }
        }
        return deepest
    }

    @Test func threeHundredThousandParenthesesAreAnErrorNotAStackOverflow() throws {
        let text = String(repeating: "(", count: 300_000) + "a == 1" + String(repeating: ")", count: 300_000)
        let e = try #require(syntaxError(text))
        #expect(e.description == "nested deeper than 64 levels at column 65")
        // The limit itself parses.
        let ok = String(repeating: "(", count: 64) + "a == 1" + String(repeating: ")", count: 64)
        #expect(try PredicateParser.parse(ok) == .compare(key: "a", op: .eq, value: .number(1)))
    }

    @Test func eleventHundredNOTsAreAnErrorAndNOTCountsAsALevel() throws {
        let e = try #require(syntaxError(String(repeating: "NOT ", count: 1_100) + "a == 1"))
        #expect(e.description == "nested deeper than 64 levels at column 257")  // the 65th NOT
        // NOT and parentheses add up: 32 of each is the limit, one more is over.
        let mixed = String(repeating: "NOT (", count: 32) + "a == 1" + String(repeating: ")", count: 32)
        #expect(depth(try PredicateParser.parse(mixed)) == 33)
        #expect(syntaxError("! " + mixed)?.message == "nested deeper than 64 levels")
    }

    @Test func longAndOrChainsBecomeBalancedTrees() throws {
        let ors = (0..<256).map { "a == \($0)" }.joined(separator: " OR ")
        let p = try PredicateParser.parse(ors)
        #expect(depth(p) == 9)  // log2(256) + 1, not 256
        let ands = (0..<256).map { "a != \($0)" }.joined(separator: " && ")
        #expect(depth(try PredicateParser.parse(ands)) == 9)
        // Three terms still read left to right.
        #expect(try PredicateParser.parse("a == 1 AND b == 2 AND c == 3")
            == .and(.and(.compare(key: "a", op: .eq, value: .number(1)), .compare(key: "b", op: .eq, value: .number(2))),
                    .compare(key: "c", op: .eq, value: .number(3))))
    }

    @Test func moreThan256ValuesIsAnError() throws {
        let set = "a IN {" + (0...256).map(String.init).joined(separator: ",") + "}"
        #expect(syntaxError(set)?.message == "more than 256 values (each word of a CONTAINS text is one)")
        #expect(syntaxError("a IN {" + (1...256).map(String.init).joined(separator: ",") + "}") == nil)
    }
}
