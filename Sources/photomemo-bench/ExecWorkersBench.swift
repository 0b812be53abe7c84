import ExecStage
import Foundation
import PhotomemoCore
import StageKit

/// `--exec-workers N`: the per-job overhead of a Python exec stage that imports heavy
/// modules (numpy and Pillow when installed, else a stack of standard ones), one process
/// per job against 2 long-lived workers (docs/exec-workers.md), N jobs each, two at a
/// time, in one run: the ratio holds on a noisy machine where the absolute times do not.
enum ExecWorkersBench {
    static let script = #"""
import json, sys
try:
    import numpy
except ImportError:
    pass
try:
    import PIL.Image
except ImportError:
    import asyncio, email.mime.multipart, http.client, xml.etree.ElementTree, decimal, sqlite3
if len(sys.argv) > 1 and sys.argv[1] == "worker":
    for line in sys.stdin:
        print(json.dumps({"request": json.loads(line)["request"], "n": 1}), flush=True)
else:
    json.loads(sys.stdin.read())
    print(json.dumps({"n": 1}))
"""#

    static func run(jobs: Int, json: Bool) throws {
        let path = NSTemporaryDirectory() + "photomemo-bench-exec-\(getpid()).py"
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        func stage(_ with: [String: JSONValue]) throws -> ExecStage {
            try ExecStage(options: StageOptions(validating: with, against: ExecStage.options, place: "bench"),
                          environment: StageEnvironment(home: URL(fileURLWithPath: NSTemporaryDirectory())))
        }
        let oneShot = try stage(["command": ["python3", .string(path)]])
        let workers = try stage(["command": ["python3", .string(path), "worker"], "workers": 2])
        defer { workers.retire() }
        func msPerJob(_ s: ExecStage) -> (ms: Double, failed: Int) {
            let next = LockedValue(0), failed = LockedValue(0)
            let start = DispatchTime.now().uptimeNanoseconds
            DispatchQueue.concurrentPerform(iterations: 2) { _ in
                while true {
                    let i = next.withLock { v -> Int in defer { v += 1 }; return v }
                    if i >= jobs { return }
                    let job = JobContext(id: Int64(i), key: "bench-\(i)", photoPath: nil, memo: MemoJob(memo: "x"), results: [:], attempt: 1)
                    if case .continue = s.run(job) {} else { failed.withLock { $0 += 1 } }
                }
            }
            return (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6 / Double(jobs), failed.value)
        }
        _ = workers.run(JobContext(id: -1, key: "warm", photoPath: nil, memo: MemoJob(memo: "x"), results: [:], attempt: 1))
        let perJob = msPerJob(oneShot), pooled = msPerJob(workers)
        let ratio = perJob.ms / max(pooled.ms, 0.001)
        if json {
            print(JSONValue.object(["jobs": .int(Int64(jobs)), "process_per_job_ms": .double(perJob.ms), "workers_ms": .double(pooled.ms),
                                    "ratio": .double(ratio), "failed": .int(Int64(perJob.failed + pooled.failed))]).jsonString)
        } else {
            print(String(format: "exec, %d jobs two at a time: process per job %.1f ms/job, 2 workers %.2f ms/job: %.0f× less overhead per job%@",
                         jobs, perJob.ms, pooled.ms, ratio, perJob.failed + pooled.failed > 0 ? " (\(perJob.failed + pooled.failed) failed)" : ""))
        }
    }
}
