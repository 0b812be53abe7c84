import Foundation
import Index
import PhotomemoCore

/// The record index at size: insert rate (one transaction per record, as the index stage
/// writes, and batched), then p50/p99 of a numeric range with a sort and limit 50, and of
/// a full-text memo search, over N records.
enum IndexBench {
    static let words = ["lunch", "receipt", "taxi", "hotel", "dinner", "coffee", "book", "train", "flight", "office"]

    static func run(records n: Int, json: Bool) throws {
        let dir = NSTemporaryDirectory() + "photomemo-bench-index-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { if ProcessInfo.processInfo.environment["PM_KEEP"] == nil { try? FileManager.default.removeItem(atPath: dir) } }
        let store = try RecordStore.open(path: dir + "/index.sqlite")
        var g = SystemRandomNumberGenerator()
        func input(_ i: Int) -> RecordStore.Input {
            let memo = (0..<4).map { _ in words.randomElement(using: &g)! }.joined(separator: " ")
            return RecordStore.Input(jobKey: "bench-\(i)", photoSHA256: nil, memo: MemoJob(memo: memo, type: "GoodsMaster", fields: [
                "salesPrice": .int(Int64.random(in: 0...100_000, using: &g)), "costRate": .double(Double.random(in: 0...1, using: &g)),
                "code": .string("C-\(i)"),
            ], owner: "bench"), assets: .emptyObject, exif: .emptyObject, width: nil, height: nil)
        }
        let single = min(n, 2000)
        var t = Date()
        for i in 0..<single { _ = try store.apply(input(i)) }
        let singleRate = Double(single) / Date().timeIntervalSince(t)
        t = Date()
        var i = single
        while i < n {
            let end = min(n, i + 1000)
            _ = try store.apply(batch: (i..<end).map(input))
            i = end
        }
        let batchRate = Double(n - single) / max(Date().timeIntervalSince(t), 1e-9)

        func percentiles(_ make: () -> (RecordPredicate, [SortKey])) throws -> (Double, Double) {
            var ms: [Double] = []
            for _ in 0..<200 {
                let (p, s) = make()
                let start = Date()
                _ = try store.query(p, sort: s, limit: 50, viewer: .admin)
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
        if json {
            print(JSONValue.object(["records": .int(Int64(n)), "insert_per_s": .double(singleRate), "batch_insert_per_s": .double(batchRate),
                                    "range_sort_limit50_ms": ["p50": .double(range.0), "p99": .double(range.1)],
                                    "memo_contains_limit50_ms": ["p50": .double(text.0), "p99": .double(text.1)]]).jsonString)
            return
        }
        print("index: \(n) records")
        print(String(format: "insert, one transaction each (index stage): %8.0f records/s", singleRate))
        print(String(format: "insert, batches of 1000:                    %8.0f records/s", batchRate))
        print(String(format: "salesPrice range + sort + limit 50:  p50 %6.2f ms  p99 %6.2f ms  (target p99 ≤ 5 ms)", range.0, range.1))
        print(String(format: "memo CONTAINS word, limit 50:        p50 %6.2f ms  p99 %6.2f ms  (target p99 ≤ 10 ms)", text.0, text.1))
    }
}
