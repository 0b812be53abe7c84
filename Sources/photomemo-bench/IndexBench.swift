import Foundation
import Index
import IndexStage
import Journal
import StageKit

/// The record index at size: the index stage's insert rate (one job per run, and the
/// batches it gets under load), then p50/p99 of a numeric range with a sort and limit 50, and of
/// a full-text memo search, over N records.
enum IndexBench {
    static let words = ["lunch", "receipt", "taxi", "hotel", "dinner", "coffee", "book", "train", "flight", "office"]

    static func run(records n: Int, json: Bool) throws {
        let dir = NSTemporaryDirectory() + "photomemo-bench-index-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { if ProcessInfo.processInfo.environment["PM_KEEP"] == nil { try? FileManager.default.removeItem(atPath: dir) } }
        // The index stage as the daemon runs it, with the journal recording each run's
        // outcomes: jobs one per run (light load), then batches of 64 (a backlog).
        let environment = StageEnvironment(home: URL(fileURLWithPath: dir))
        let stage = try IndexStage(options: StageOptions(validating: [:], against: IndexStage.options, place: "bench"),
                                   environment: environment)
        let journal = try Journal(path: dir + "/journal.sqlite")
        let store = try environment.recordIndex()
        var g = SystemRandomNumberGenerator()
        let memos = (0..<n).map { i -> QueuedMemo in
            let memo = (0..<4).map { _ in words.randomElement(using: &g)! }.joined(separator: " ")
            return QueuedMemo(memo: MemoJob(memo: memo, type: "GoodsMaster", fields: [
                "salesPrice": .int(Int64.random(in: 0...100_000, using: &g)), "costRate": .double(Double.random(in: 0...1, using: &g)),
                "code": .string("C-\(i)"),
            ], owner: "bench"), photo: .none, key: "bench-\(i)", source: "bench")
        }
        for start in stride(from: 0, to: n, by: 5000) {
            _ = try journal.commitMemos(Array(memos[start..<min(n, start + 5000)]), position: nil, joinTimeoutSeconds: 60)
        }
        /// Claims, runs and records `count` jobs, `size` per run; returns jobs per second.
        func drive(_ count: Int, size: Int) throws -> Double {
            let t = Date()
            var left = count
            while left > 0 {
                let jobs = try journal.claim(stageIndex: 0, stageName: "index", limit: min(size, left))
                let outcomes = stage.run(jobs: jobs.map(\.context))
                _ = try journal.recordSteps(JobStateMachine.steps(Array(zip(jobs, outcomes)), stageCount: 1, retry: .default),
                                            stageName: "index", durationMs: 0)
                left -= jobs.count
            }
            return Double(count) / max(Date().timeIntervalSince(t), 1e-9)
        }
        let single = min(n / 2, 2000)
        let singleRate = try drive(single, size: 1)
        let batchRate = try drive(n - single, size: IndexStage.batchLimit)

        func percentiles(_ make: () -> (RecordPredicate, [SortKey])) throws -> (Double, Double) {
            var ms: [Double] = []
            for _ in 0..<200 {
                let (p, s) = make()
                let start = Date()
                _ = try store.query(p, type: nil, sort: s, limit: 50, cursor: nil, viewer: .admin)
                ms.append(Date().timeIntervalSince(start) * 1000)
            }
            ms.sort()
            return (ms[ms.count / 2], ms[Int(Double(ms.count) * 0.99) - 1])
        }
        let range = try percentiles {
            let low = Int.random(in: 0...99_000, using: &g)
            return (try! PredicateParser.parse("salesPrice >= \(low) AND salesPrice <= \(low + 1000)"), [SortKey(key: "salesPrice", descending: true)])
        }
        let text = try percentiles { (try! PredicateParser.parse("memo CONTAINS \"\(words.randomElement(using: &g)!)\""), []) }
        // What the query time limit (SQLite's progress handler) costs: the range query with
        // it and without it, in alternating rounds, the ratio of their median p50s.
        var withLimit: [Double] = [], withoutLimit: [Double] = []
        let records = store as! RecordStore
        for _ in 0..<5 {
            for limited in [true, false] {
                records.queryTimeLimit = limited ? 1 : .infinity
                let p50 = try percentiles {
                    let low = Int.random(in: 0...99_000, using: &g)
                    return (try! PredicateParser.parse("salesPrice >= \(low) AND salesPrice <= \(low + 1000)"), [SortKey(key: "salesPrice", descending: true)])
                }.0
                if limited { withLimit.append(p50) } else { withoutLimit.append(p50) }
            }
        }
        records.queryTimeLimit = 1
        let limitCost = withLimit.sorted()[2] / max(withoutLimit.sorted()[2], 1e-9)
        if json {
            print(JSONValue.object(["records": .int(Int64(n)), "insert_per_s": .double(singleRate), "batch_insert_per_s": .double(batchRate),
                                    "range_sort_limit50_ms": ["p50": .double(range.0), "p99": .double(range.1)],
                                    "memo_contains_limit50_ms": ["p50": .double(text.0), "p99": .double(text.1)],
                                    "query_time_limit_cost": .double(limitCost)]).jsonString)
            return
        }
        print("index: \(n) records")
        print(String(format: "index stage + journal, one job per run:      %8.0f records/s", singleRate))
        print(String(format: "index stage + journal, batches of %-3d:      %8.0f records/s  (target ≥ 5,000)", IndexStage.batchLimit, batchRate))
        print(String(format: "salesPrice range + sort + limit 50:  p50 %6.2f ms  p99 %6.2f ms  (target p99 ≤ 5 ms)", range.0, range.1))
        print(String(format: "memo CONTAINS word, limit 50:        p50 %6.2f ms  p99 %6.2f ms  (target p99 ≤ 10 ms)", text.0, text.1))
        print(String(format: "range query with the 1 s time limit ÷ without: %.3fx (median of 5 alternating rounds of 200)", limitCost))
    }
}
