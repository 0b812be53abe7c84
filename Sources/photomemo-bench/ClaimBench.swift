import Foundation
import Journal
import StageKit
import Postgres

/// The journal's queue under a cluster's load: batched claims by two hosts, claim + record,
/// the advisory-locked writer's transactions/s, and add → claim latency through NOTIFY.
enum ClaimBench {
    struct Rates { var claims = 0.0, claimRecord = 0.0, writerTxns = 0.0 }

    static func memos(_ n: Int, tag: String) -> [QueuedMemo] {
        (0..<n).map { i in
            QueuedMemo(memo: MemoJob(memo: "lunch receipt \(i)", type: "GoodsMaster", fields: ["code": .string("C-\(i)")], owner: "bench"),
                       photo: .none, key: "\(tag)-\(i)", source: "bench")
        }
    }

    static func commit(_ j: Journal, _ n: Int, tag: String) throws {
        let all = memos(n, tag: tag)
        for s in stride(from: 0, to: n, by: 5000) {
            _ = try j.commitMemos(Array(all[s..<min(n, s + 5000)]), position: nil, joinTimeoutSeconds: 60)
        }
    }

    /// Each journal on its own thread claims `batch` at stage 0 until none is left
    /// (recording each as advanced to stage 1 when `record`); returns jobs/s.
    static func drain(_ journals: [Journal], batch: Int, record: Bool) throws -> (rate: Double, jobs: Int, txns: Int) {
        let jobs = LockedValue(0), txns = LockedValue(0), failure = LockedValue<String?>(nil)
        let t = Date()
        DispatchQueue.concurrentPerform(iterations: journals.count) { h in
            do {
                while true {
                    let claimed = try journals[h].claim(stageIndex: 0, stageName: "s0", limit: batch)
                    if claimed.isEmpty { return }
                    var n = 1
                    if record {
                        let runs = claimed.map { ($0, StageOutcome.continue()) }
                        _ = try journals[h].recordSteps(JobStateMachine.steps(runs, stageCount: 2, retry: .default), stageName: "s0", durationMs: 0)
                        n += 1
                    }
                    jobs.withLock { $0 += claimed.count }
                    txns.withLock { $0 += n }
                }
            } catch {
                failure.value = "\(error)"
            }
        }
        if let f = failure.value { throw SideBySide.Failure("claims: \(f)") }
        return (Double(jobs.value) / Date().timeIntervalSince(t), jobs.value, txns.value)
    }

    /// `open(host)` gives a journal with its own connection.
    static func rates(jobs n: Int, hosts: Int, open: (String) throws -> Journal) throws -> Rates {
        let journals = try (0..<hosts).map { try open("bench-\($0)") }
        var r = Rates()
        try commit(journals[0], n, tag: "claim")
        r.claims = try drain(journals, batch: 64, record: false).rate
        try commit(journals[0], n, tag: "record")
        r.claimRecord = try drain(journals, batch: 64, record: true).rate
        // The writer's ceiling: one job per transaction, so every claim and record is a
        // write transaction through the one advisory lock.
        let small = max(1000, n / 10)
        try commit(journals[0], small, tag: "single")
        let single = try drain(journals, batch: 1, record: true)
        r.writerTxns = single.rate * Double(single.txns) / Double(single.jobs)
        return r
    }

    /// Add → claim latency in ms: an idle host waits in poll(2) on a LISTEN connection; on
    /// a NOTIFY from another host it claims. From before the commit to the claim's return.
    /// Sorted totals, and the medians of the parts: the adder's commit, and the idle host's claim after its wake-up.
    static func notifyLatency(url: String, samples: Int) throws -> (total: [Double], commitMs: Double, claimMs: Double) {
        let adder = try Journal(connection: PostgresDatabase(url: url), path: "bench", host: "adder", leaseSeconds: 30)
        let idle = try Journal(connection: PostgresDatabase(url: url), path: "bench", host: "idle", leaseSeconds: 30)
        let listener = try PostgresConnection(url: url, applicationName: "bench-listener")
        try listener.listen("photomemo_work")
        let started = LockedValue(0.0), claimed = DispatchSemaphore(value: 0)
        let out = LockedValue<[Double]>([]), claims = LockedValue<[Double]>([]), failure = LockedValue<String?>(nil)
        var commits: [Double] = []
        let idleThread = Thread {
            do {
                while out.value.count < samples {
                    var p = pollfd(fd: listener.socket, events: Int16(POLLIN), revents: 0)
                    guard poll(&p, 1, 2000) > 0 else { throw SideBySide.Failure("no NOTIFY within 2 s") }
                    try listener.consumeInput()
                    let wake = listener.drainNotifications().contains { $0.payload != "idle" }
                    guard wake else { continue }
                    let woke = unixNow()
                    let jobs = try idle.claim(stageIndex: 0, stageName: "s0", limit: 64)
                    guard !jobs.isEmpty else { continue }
                    let ms = (unixNow() - started.value) * 1000
                    out.withLock { $0.append(ms) }
                    claims.withLock { $0.append((unixNow() - woke) * 1000) }
                    claimed.signal()
                }
            } catch {
                failure.value = "\(error)"
                claimed.signal()
            }
        }
        idleThread.start()
        for i in 0..<samples {
            started.value = unixNow()
            _ = try adder.commitMemos(memos(1, tag: "notify-\(i)"), position: nil, joinTimeoutSeconds: 60)
            commits.append((unixNow() - started.value) * 1000)
            claimed.wait()
            if let f = failure.value { throw SideBySide.Failure("notify: \(f)") }
            usleep(UInt32.random(in: 1000...5000))  // not in lock-step with anything periodic
        }
        func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
        return (out.value.sorted(), median(commits), median(claims.value))
    }
}
