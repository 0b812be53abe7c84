import Foundation
import Index
import StageKit

/// A fresh record index in /tmp with a few records holding every field kind (integer,
/// double, string, date, bool, list of strings, reference), owned by an admin, by "alice"
/// and public, so compiled predicates run against rows of each shape.
enum SampleIndex {
    static func open() -> RecordStore {
        let path = NSTemporaryDirectory() + "photomemo-fuzz-predicate-\(getpid()).sqlite"
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        do {
            let store = try RecordStore(path: path)
            var first: String?
            for (i, job) in jobs.enumerated() {
                var job = job
                // A reference names only a record its writer may read: the admin's records
                // refer to the first (an admin's too), alice's and bob's to none.
                if let first, job.owner == nil { job.fields["parent"] = ["ref": .string(first), "action": "deleteSelf"] }
                let input = RecordInput(jobKey: "fuzz-\(i)", photoSHA256: nil, memo: job, assets: .emptyObject,
                                              exif: .emptyObject, width: i % 2 == 0 ? 4032 : nil, height: i % 2 == 0 ? 3024 : nil)
                let (record, _) = try store.apply(input, now: 1_764_000_000)
                first = first ?? record.id
            }
            return store
        } catch {
            fatalError("cannot make the sample index at \(path): \(error)")
        }
    }

    static let jobs: [MemoJob] = [
        MemoJob(memo: "lunch receipt", type: "GoodsMaster",
                fields: ["code": "A-001", "salesPrice": 1200, "costRate": 0.35, "date": "2026-11-29T12:00:00Z",
                         "tags": ["red", "shoe"], "sold": true]),
        MemoJob(memo: "red shoe", type: "GoodsMaster",
                fields: ["code": "B-7", "salesPrice": 90, "costRate": 1.5, "tags": [], "sold": false], owner: "alice"),
        MemoJob(memo: "call the plumber", type: "Task", fields: ["priority": 2, "code": "007", "address": "Tokyo"]),
        MemoJob(memo: "", type: "Houses", fields: ["salesPrice": -5, "name": "Ámbar", "date": "2026-01-01"], owner: "bob"),
        MemoJob(memo: "receipt 東京", type: "Memo", fields: ["salesPrice": 9_223_372_036_854_775_807, "costRate": -0.0]),
    ]
}
