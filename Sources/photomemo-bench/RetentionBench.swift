import Foundation
import Journal
import PhotomemoCore
import StageKit
import SQLite

/// The journal's size after `jobs` finished jobs on SQLite, without retention and with it
/// (pruned every 500 jobs, as the daemon's minute would under a steady load). Half are
/// photos (a stored photo's key stays: a tombstone), half unkeyed queue lines (gone).
enum RetentionBench {
    static func run(jobs: Int, json: Bool) throws {
        let kept = try size(jobs: jobs, prune: false)
        let pruned = try size(jobs: jobs, prune: true)
        let row: [String: JSONValue] = [
            "jobs": .int(Int64(jobs)), "bytes_without_retention": .int(kept), "bytes_with_retention": .int(pruned),
            "bytes_per_job_kept": .int(kept / Int64(jobs)), "bytes_per_job_pruned": .int(pruned / Int64(jobs)),
        ]
        if json { print(JSONValue.object(row).jsonString); return }
        print("retention  \(jobs) jobs (half photos, half queue lines) on SQLite")
        print("  without retention: \(kept / 1024) KiB, \(kept / Int64(jobs)) bytes per job kept")
        print("  with retention:    \(pruned / 1024) KiB, \(pruned / Int64(jobs)) bytes per job (tombstones of photos' keys)")
    }

    /// Bytes of the journal (file and WAL, checkpointed) after `jobs` jobs went through four stages.
    static func size(jobs: Int, prune: Bool) throws -> Int64 {
        let dir = NSTemporaryDirectory() + "photomemo-bench-retention-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/photomemo.sqlite"
        let journal = try Journal(path: path)
        var retention = Retention()
        (retention.done, retention.failed, retention.cancelled) = (0, 0, 0)
        let stages = JournalFlow.stages
        for start in stride(from: 0, to: jobs, by: 500) {
            let range = start..<min(jobs, start + 500)
            for chunk in stride(from: range.lowerBound, to: range.upperBound, by: 100) {
                let ids = chunk..<min(range.upperBound, chunk + 100)
                _ = try journal.commitPhotos(ids.filter { $0 % 2 == 0 }.map { i in
                    TakenPhoto(name: "photo-\(i).jpg", path: "/inbox/photo-\(i).jpg", identity: "1:\(i):4400000:0",
                               sha256: String(format: "%064x", i))
                })
                _ = try journal.commitMemos(ids.filter { $0 % 2 == 1 }.map { i in
                    QueuedMemo(memo: MemoJob(memo: "line \(i) of the queue file, a memo of some length", type: "Memo"), photo: .none,
                               key: "queue:queue.jsonl:g0:\(i * 64)", source: "queue.jsonl line \(i)")
                }, position: nil, joinTimeoutSeconds: 600)
            }
            for (index, name) in stages.enumerated() {
                while case let claimed = try journal.claim(stageIndex: index, stageName: name, limit: 100), !claimed.isEmpty {
                    let runs = claimed.map { ($0, StageOutcome.continue(result: ["stage": .string(name), "ms": .int(12)])) }
                    _ = try journal.recordSteps(JobStateMachine.steps(runs, stageCount: stages.count, retry: .default),
                                                stageName: name, durationMs: 12)
                }
            }
            if prune { while try journal.pruneBatch(retention: retention, limit: 500, now: unixNow() + 1).pruned > 0 {} }
        }
        let db = try Database(path: path)
        try db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
        let bytes = { (p: String) in ((try? FileManager.default.attributesOfItem(atPath: p))?[.size] as? Int64) ?? 0 }
        return bytes(path) + bytes(path + "-wal")
    }
}
