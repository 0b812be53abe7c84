import Foundation
import StageKit
import TestSupport
import Testing
@testable import Index

/// Random records, random predicates and sorts: the SQL the compiler produces must return
/// exactly what a plain Swift evaluation of the same predicate returns, in the same order,
/// and paging through cursors must give the same list.
@Suite struct QueryPropertyTests {
    typealias Rng = SeededRandom

    static let words = ["apple", "banana", "cherry", "date", "elder", "fig"]
    static let codes = ["A-1", "A-2", "B-1", "B-20", "C"]
    static let days = (0..<6).map { 1_767_225_600.0 + Double($0) * 86_400 * 7 }

    /// An independent model of a record: typed values as the design defines them.
    struct Model {
        var memo: String
        var type: String
        var n: Double?       // number field
        var code: String?    // string field
        var tags: [String]   // list field
        var day: Double?     // date field
        var flag: Bool?      // bool field
        var id = ""
        var order = 0        // creation order: the last tie-breaker
        var alice = true     // alice may read it (hers, public or shared with her)
    }

    func randomModel(_ g: inout Rng) -> Model {
        Model(memo: (0..<Int.random(in: 1...3, using: &g)).map { _ in Self.words.randomElement(using: &g)! }.joined(separator: " "),
              type: ["Memo", "Task"].randomElement(using: &g)!,
              n: Bool.random(using: &g) ? Double(Int.random(in: -5...15, using: &g)) : nil,
              code: Bool.random(using: &g) ? Self.codes.randomElement(using: &g) : nil,
              tags: Bool.random(using: &g) ? Array(Self.words.shuffled(using: &g).prefix(Int.random(in: 1...3, using: &g))) : [],
              day: Bool.random(using: &g) ? Self.days.randomElement(using: &g) : nil,
              flag: Bool.random(using: &g) ? Bool.random(using: &g) : nil)
    }

    func fields(_ m: Model) -> [String: JSONValue] {
        var f: [String: JSONValue] = [:]
        if let n = m.n { f["n"] = .int(Int64(n)) }
        if let c = m.code { f["code"] = .string(c) }
        if !m.tags.isEmpty { f["tags"] = .array(m.tags.map(JSONValue.string)) }
        if let d = m.day { f["day"] = .string(isoTimestamp(d).replacingOccurrences(of: ".000Z", with: "Z")) }
        if let b = m.flag { f["flag"] = .bool(b) }
        return f
    }

    indirect enum P {
        case num(RecordPredicate.Operator, Double), code(RecordPredicate.Operator, String), prefix(String), tag(String)
        case memo(String), inCodes([String]), dayBetween(Double, Double), flag(Bool), type(String)
        case not(P), and(P, P), or(P, P), always

        var text: String {
            func lit(_ d: Double) -> String { String(Int(d)) }
            switch self {
            case .num(let op, let v): return "n \(op.rawValue) \(lit(v))"
            case .code(let op, let v): return "code \(op.rawValue) \"\(v)\""
            case .prefix(let p): return "code BEGINSWITH \"\(p)\""
            case .tag(let t): return "tags CONTAINS \"\(t)\""
            case .memo(let w): return "memo CONTAINS \"\(w)\""
            case .inCodes(let cs): return "code IN {" + cs.map { "\"\($0)\"" }.joined(separator: ", ") + "}"
            case .dayBetween(let a, let b): return "day BETWEEN {DATE(\"\(isoTimestamp(a))\"), DATE(\"\(isoTimestamp(b))\")}"
            case .flag(let b): return "flag == \(b)"
            case .type(let t): return "type == \"\(t)\""
            case .not(let p): return "NOT (\(p.text))"
            case .and(let a, let b): return "(\(a.text)) AND (\(b.text))"
            case .or(let a, let b): return "(\(a.text)) OR (\(b.text))"
            case .always: return "TRUEPREDICATE"
            }
        }

        func eval(_ m: Model) -> Bool {
            func cmp<T: Comparable>(_ a: T?, _ op: RecordPredicate.Operator, _ b: T) -> Bool {
                guard let a else { return false }  // a missing field matches nothing
                switch op {
                case .eq: return a == b
                case .ne: return a != b
                case .lt: return a < b
                case .le: return a <= b
                case .gt: return a > b
                case .ge: return a >= b
                }
            }
            switch self {
            case .num(let op, let v): return cmp(m.n, op, v)
            case .code(let op, let v): return cmp(m.code, op, v)
            case .prefix(let p): return m.code?.hasPrefix(p) ?? false
            case .tag(let t): return m.tags.contains(t)
            case .memo(let w): return m.memo.split(separator: " ").contains { $0 == w }
            case .inCodes(let cs): return m.code.map(cs.contains) ?? false
            case .dayBetween(let a, let b): return m.day.map { $0 >= a && $0 <= b } ?? false
            case .flag(let b): return m.flag == b
            case .type(let t): return m.type == t
            case .not(let p): return !p.eval(m)
            case .and(let a, let b): return a.eval(m) && b.eval(m)
            case .or(let a, let b): return a.eval(m) || b.eval(m)
            case .always: return true
            }
        }
    }

    func randomPredicate(_ g: inout Rng, depth: Int = 0) -> P {
        let ops = RecordPredicate.Operator.allCases
        let leaf = Int.random(in: 0..<(depth >= 2 ? 9 : 13), using: &g)
        switch leaf {
        case 0: return .num(ops.randomElement(using: &g)!, Double(Int.random(in: -6...16, using: &g)))
        case 1: return .code(ops.randomElement(using: &g)!, Self.codes.randomElement(using: &g)!)
        case 2: return .prefix(["A", "B", "A-", "C", "Z"].randomElement(using: &g)!)
        case 3: return .tag(Self.words.randomElement(using: &g)!)
        case 4: return .memo(Self.words.randomElement(using: &g)!)
        case 5: return .inCodes(Array(Self.codes.shuffled(using: &g).prefix(Int.random(in: 1...3, using: &g))))
        case 6:
            let a = Self.days.randomElement(using: &g)!, b = Self.days.randomElement(using: &g)!
            return .dayBetween(min(a, b), max(a, b))
        case 7: return .flag(Bool.random(using: &g))
        case 8: return Bool.random(using: &g) ? .type("Task") : .always
        case 9: return .not(randomPredicate(&g, depth: depth + 1))
        case 10, 11: return .and(randomPredicate(&g, depth: depth + 1), randomPredicate(&g, depth: depth + 1))
        default: return .or(randomPredicate(&g, depth: depth + 1), randomPredicate(&g, depth: depth + 1))
        }
    }

    /// Expected order: sort keys with NULLS LAST, then creation order.
    func sorted(_ ms: [Model], by keys: [SortKey]) -> [Model] {
        func value(_ m: Model, _ k: String) -> (Double?, String?) {
            switch k {
            case "n": (m.n, nil)
            case "code": (nil, m.code)
            case "day": (m.day, nil)
            default: (nil, nil)
            }
        }
        return ms.sorted { a, b in
            for k in keys {
                let (an, at) = value(a, k.key), (bn, bt) = value(b, k.key)
                if an != bn {
                    guard let an else { return false }
                    guard let bn else { return true }
                    return k.descending ? an > bn : an < bn
                }
                if at != bt {
                    guard let at else { return false }
                    guard let bt else { return true }
                    return k.descending ? at > bt : at < bt
                }
            }
            return a.order < b.order
        }
    }

    @Test(arguments: Engine.allCases) func sqlAgreesWithAnIndependentEvaluationAcrossThousandsOfCases(_ engine: Engine) throws {
        try withStore(engine) { try check($0) }
    }

    /// A user's query takes another way (from the records they may read, each tested on
    /// its own rows): the same answers, among records of several owners.
    @Test(arguments: Engine.allCases) func aUsersQueriesAgreeToo(_ engine: Engine) throws {
        try withStore(engine) { try check($0, viewer: .user("alice")) }
    }

    func check(_ store: RecordStore, viewer: Viewer = .admin) throws {
        var g = Rng(state: 20261129)
        var owners = Rng(state: 7)  // its own sequence: the admin's cases stay what they were
        var models: [Model] = []
        for i in 0..<80 {
            var m = randomModel(&g)
            let owner = viewer == .admin ? nil : ["alice", "bob", nil].randomElement(using: &owners)!
            let (r, _) = try store.apply(RecordInput(jobKey: "k\(i)", photoSHA256: nil,
                                                           memo: MemoJob(memo: m.memo, type: m.type, fields: fields(m), owner: owner),
                                                           assets: .emptyObject, exif: .emptyObject, width: nil, height: nil))
            if owner == "alice", Int.random(in: 0..<3, using: &owners) == 0 {  // hers and public: listed once
                _ = try store.update(r.id, memo: nil, fields: [:], acl: ACL(readers: ["alice"], publicRead: true), ifTag: nil, viewer: .admin)
            } else if owner != "alice", viewer != .admin {
                switch Int.random(in: 0..<3, using: &owners) {
                case 0: m.alice = false
                case 1: _ = try store.update(r.id, memo: nil, fields: [:], acl: ACL(publicRead: true), ifTag: nil, viewer: .admin)
                default: _ = try store.update(r.id, memo: nil, fields: [:], acl: ACL(readers: ["carol", "alice"]), ifTag: nil, viewer: .admin)
                }
            }
            m.id = r.id
            m.order = i
            models.append(m)
        }
        models = models.filter(\.alice)
        let sortChoices: [[SortKey]] = [[], [SortKey(key: "n", descending: false)], [SortKey(key: "n", descending: true)],
                                        [SortKey(key: "code", descending: false), SortKey(key: "n", descending: true)],
                                        [SortKey(key: "day", descending: true), SortKey(key: "code", descending: false)]]
        var cases = 0
        for _ in 0..<3000 {
            let p = randomPredicate(&g)
            let sort = sortChoices.randomElement(using: &g)!
            let expected = sorted(models.filter { p.eval($0) }, by: sort).map(\.id)
            let parsed = try RecordPredicate.parse(p.text)
            let got = try store.query(parsed, sort: sort, limit: 1000, viewer: viewer).records.map(\.id)
            #expect(got == expected, "\(p.text) sorted by \(sort)")
            if got != expected { break }
            // Paging with cursors returns the same list, 7 at a time.
            if cases % 10 == 0 {
                var paged: [String] = []
                var cursor: String?
                repeat {
                    let page = try store.query(parsed, sort: sort, limit: 7, cursor: cursor, viewer: viewer)
                    paged += page.records.map(\.id)
                    cursor = page.cursor
                } while cursor != nil
                #expect(paged == expected, "paging \(p.text) by \(sort)")
            }
            cases += 1
        }
        #expect(cases == 3000)
    }
}

extension RecordPredicate {
    static func parse(_ text: String) throws -> RecordPredicate { try PredicateParser.parse(text) }
}
