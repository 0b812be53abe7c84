import Foundation
import StageKit

/// A real exec worker in Python (docs/exec-workers.md) for the tests: it answers each job
/// line by the job's memo text — `continue`, `skip`, `retry`, `fail`, `unavailable`,
/// `hang`, `exit` (mid-job), `garbage`, `huge` (a 100 MB line), `stderr`, `annotate` — and its result
/// names its pid. `argv[1]`: `serve` (default), `crash` (dies at start with a reason on
/// stderr), `deaf` (never reads stdin). `$MARKER`, if set, gets "bye" on a clean end of input.
public enum ExecWorkerScript {
    public static let text = #"""
import json, os, sys, time
mode = sys.argv[1] if len(sys.argv) > 1 else "serve"
if mode == "crash":
    sys.stderr.write("no model file\n"); sys.stderr.flush(); sys.exit(3)
if mode == "deaf":
    time.sleep(3600)
slow_ms = int(os.environ.get("SLOW_MS", "0"))
for line in sys.stdin:
    job = json.loads(line)
    rid, say = job["request"], job["memo"]["memo"]
    if slow_ms: time.sleep(slow_ms / 1000)
    if say == "hang": time.sleep(3600)
    if say == "exit": os._exit(9)
    if say == "garbage":
        print("this is not json", flush=True); continue
    if say == "huge":
        sys.stdout.write("x" * (100 << 20) + "\n"); sys.stdout.flush(); continue
    if say == "stderr":
        sys.stderr.write("note from the worker\n"); sys.stderr.flush()
    answer = {"request": rid}
    if say == "annotate":
        answer.update(outcome="continue", annotations={"ocr_text": "SALE"})
    elif say in ("skip", "retry", "fail", "unavailable"):
        answer.update(outcome=say, reason="because " + say)
    else:
        answer.update(pid=os.getpid(), key=job["key"])
    print(json.dumps(answer), flush=True)
if os.environ.get("MARKER"):
    open(os.environ["MARKER"], "w").write("bye")
"""#

    /// Writes the script to a fresh temporary file; returns its path.
    public static func install() throws -> String {
        let path = NSTemporaryDirectory() + "pm-exec-worker-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).py"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
