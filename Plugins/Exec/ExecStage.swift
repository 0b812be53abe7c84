import Foundation
import PhotomemoCore
import StageKit

/// `exec`: runs an external program per job, so a stage can be written in any language.
/// The job is JSON on stdin (id, key, attempt, photo_path, memo, results, working_set); the program
/// answers with its exit code and, optionally, JSON on stdout:
///
/// | exit | outcome |
/// | --- | --- |
/// | 0 | continue; stdout JSON (if any) is the stage's result, or `{"outcome": ...}` |
/// | 65 (EX_DATAERR) | fail: the job can never succeed |
/// | 69 (EX_UNAVAILABLE) | unavailable: a dependency is down, wait without spending attempts |
/// | 75 (EX_TEMPFAIL), other codes, signals, timeout | retry, spending an attempt |
///
/// `{"outcome": "continue"|"skip"|"retry"|"fail"|"unavailable", "reason": "...",
/// "code": "...", "after_ms": N, "result": {...}}` on stdout with exit 0 chooses the
/// outcome explicitly; `code` is the error's (`PhotomemoError.Code`: `no_space` makes a
/// retry or failure the disk's outage). Without it, an exit status, a signal or an answer
/// is `stage_error` (a timeout `timeout`, exit 65 `bad_input`, exit 69 `dependency`):
/// the engine never reads the program's text for a cause.
/// `"annotations": {NAME: value}` in the answer (either form) adds facts to the job's
/// working set when it continues: the record gets them as fields (`WorkingSet.annotate`).
/// Like every stage it must be idempotent on the job's `key`.
///
/// The program sees a clean environment (`SubprocessEnvironment`): `PATH`, `HOME`, `LANG`,
/// the `PHOTOMEMO_*` job variables, and only what the definition names in `env` and
/// `pass_env`, never the daemon's credentials.
///
/// With `"workers": N` the program is started N times and stays running, taking jobs as
/// JSON lines on stdin and answering each with the outcome object plus its request id
/// (`ExecWorkerPool`, docs/exec-workers.md).
public struct ExecStage: LongLivedStage {
    public static let name = "exec"
    public static let summary = "runs an external program per job (job JSON on stdin, outcome by exit code / stdout JSON)"
    public static let workload = StageWorkload.io
    public static let options: [StageOption] = [
        StageOption("command", .stringList, "program and arguments, e.g. [\"./stages/tag.py\", \"--fast\"] (PATH is searched)"),
        StageOption("timeout_ms", .integer, default: 60_000, "after this long the program's process group gets SIGTERM, and SIGKILL 2 s later (with workers: per job; the worker is ended and started again)"),
        StageOption("dependency", .string, default: "exec", "name shown as down in status when the program exits 69"),
        StageOption("env", .object, default: .emptyObject,
                    "variables to set for the program, NAME → string value, e.g. {\"MODEL\": \"small\"}"),
        StageOption("pass_env", .stringList, default: [],
                    "names of daemon variables the program gets too, when set (by default it gets only PATH, HOME, LANG and PHOTOMEMO_*)"),
        StageOption("workers", .integer, default: 0,
                    "long-lived copies of the program taking jobs as JSON lines (docs/exec-workers.md); 0: a process per job"),
        StageOption("in_flight", .integer, default: 1, "with workers: jobs a worker is sent before it has answered (1 to 64)"),
    ]
    static let maxWorkers = 64

    let command: [String]
    let timeoutMs: Int
    let dependency: String
    let home: String
    let env: [String: String]
    let passEnv: [String]
    /// Set when `workers` > 0.
    let pool: ExecWorkerPool?

    public init(options: StageOptions, environment: StageEnvironment) throws {
        guard let command = options.strings("command"), let program = command.first, !program.isEmpty else {
            throw PhotomemoError(.badDefinition, "\"command\" (a non-empty list of strings) is required")
        }
        self.command = command
        timeoutMs = Int(options.int("timeout_ms")!)
        dependency = options.string("dependency")!
        home = environment.home.path
        guard timeoutMs > 0 else { throw PhotomemoError(.badDefinition, "\"timeout_ms\" must be positive") }
        var env: [String: String] = [:]
        for (name, value) in options["env"]?.objectValue ?? [:] {
            guard let text = value.stringValue else {
                throw PhotomemoError(.badDefinition, "\"env\": the value of \(name) must be a string, got \(value.typeName)")
            }
            try SubprocessEnvironment.checkName(name)
            env[name] = text
        }
        self.env = env
        passEnv = options.strings("pass_env") ?? []
        for name in passEnv { try SubprocessEnvironment.checkName(name) }
        let workers = Int(options.int("workers")!), inFlight = Int(options.int("in_flight")!)
        guard (0...Self.maxWorkers).contains(workers) else {
            throw PhotomemoError(.badDefinition, "\"workers\" must be from 0 to \(Self.maxWorkers)")
        }
        guard (1...64).contains(inFlight) else { throw PhotomemoError(.badDefinition, "\"in_flight\" must be from 1 to 64") }
        pool = workers == 0 ? nil : ExecWorkerPool(.init(
            command: command, environment: SubprocessEnvironment.clean(passing: passEnv, values: env, documented: ["PHOTOMEMO_HOME": home]),
            workers: workers, inFlight: inFlight, timeoutMs: timeoutMs, dependency: dependency))
    }

    public func retire() { pool?.retire() }

    /// Exactly what the program's environment holds for `job`.
    func environment(for job: JobContext) -> [String: String] {
        SubprocessEnvironment.clean(passing: passEnv, values: env, documented: [
            "PHOTOMEMO_HOME": home, "PHOTOMEMO_JOB_ID": String(job.id), "PHOTOMEMO_JOB_KEY": job.key,
            "PHOTOMEMO_ATTEMPT": String(job.attempt), "PHOTOMEMO_PHOTO": job.photoPath ?? "",
        ])
    }

    public func run(_ job: JobContext) -> StageOutcome {
        if let pool { return pool.run(job) }
        let r: Subprocess.Result
        do {
            r = try Subprocess.run(command, stdin: Array((job.json.jsonString + "\n").utf8), environment: environment(for: job),
                                   timeoutMs: timeoutMs)
        } catch {
            return .retry(.of(error, or: .io), "cannot start \(command[0]): \(error)")
        }
        let why = r.stderrTail.isEmpty ? "" : ": " + r.stderrTail.split(separator: "\n").suffix(3).joined(separator: " | ")
        if r.timedOut { return .retry(.timeout, "\(command[0]) timed out after \(timeoutMs) ms\(why)") }
        if r.stopped { return .retry(.stageError, "\(command[0]) was stopped: the daemon is shutting down") }
        if let sig = r.signal { return .retry(.stageError, "\(command[0]) was killed by signal \(sig)\(why)") }
        switch r.status! {
        case 0: return Self.parseAnswer(r.stdout, job: job)
        case 65: return .fail(.badInput, "\(command[0]) rejected the job (exit 65)\(why)")
        case 69: return .unavailable(dependency: dependency, .dependency, "\(command[0]) exit 69\(why)")
        default: return .retry(.stageError, "\(command[0]) exited with status \(r.status!)\(why)")
        }
    }

    /// Maps exit-0 stdout to an outcome: empty → continue; `{"outcome": ...}` → as said;
    /// other JSON → continue with it as the result; not JSON → retry (a broken program,
    /// `bad_json`). A continuing answer's `annotations` go into `job`'s working set; one that breaks
    /// the field rules is a retry, as a broken program's answer is.
    static func parseAnswer(_ stdout: [UInt8], job: JobContext) -> StageOutcome {
        let text = String(decoding: stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.isEmpty { return .continue() }
        guard let v = try? JSONValue.parse(text) else { return .retry(.badJSON, "stdout is not JSON: \(text.prefix(200))") }
        return answer(v, job: job)
    }

    /// The outcome a JSON answer chooses (stdout of a one-shot run, or a worker's answer
    /// without its request id), its `annotations` applied to `job`'s working set.
    static func answer(_ v: JSONValue, job: JobContext) -> StageOutcome {
        let outcome = parseOutcome(v)
        guard case .continue = outcome, let given = v["annotations"] else { return outcome }
        guard case .object(let annotations) = given else { return .retry(.badJSON, "stdout's \"annotations\" must be an object, got \(given.typeName)") }
        do {
            try job.update { set in for (name, value) in annotations.sorted(by: { $0.key < $1.key }) { try set.annotate(name, value) } }
        } catch let e as PhotomemoError {
            return .retry(.badJSON, "stdout's annotations: \(e.message)")
        } catch {
            return .retry(.badJSON, "stdout's annotations: \(error)")
        }
        return outcome
    }

    /// `{"outcome": ...}` as said, with its `"code"` (else `stage_error`, an outage's
    /// `dependency`); a `"code"` that is not one is a broken answer, retried.
    static func parseOutcome(_ v: JSONValue) -> StageOutcome {
        guard let outcome = v["outcome"]?.stringValue else { return .continue(result: v) }
        let reason = v["reason"]?.stringValue ?? "no reason given"
        var code: PhotomemoError.Code?
        if let given = v["code"], given != .null {
            guard let name = given.stringValue, PhotomemoError.Code.isWellFormed(name) else {
                return .retry(.badJSON, "\"code\" on stdout is not a code (1 to 40 of a-z, 0-9 and _, from a letter): \(given.jsonString.prefix(60))")
            }
            code = PhotomemoError.Code(rawValue: name)
        }
        switch outcome {
        case "continue": return .continue(result: v["result"] ?? .emptyObject)
        case "skip": return .skip(reason: reason)
        case "retry": return .retry(code ?? .stageError, reason, after: v["after_ms"]?.intValue.map { .milliseconds($0) })
        case "fail": return .fail(code ?? .stageError, reason)
        case "unavailable": return .unavailable(dependency: v["dependency"]?.stringValue ?? "exec", code ?? .dependency, reason)
        default: return .retry(.badJSON, "unknown outcome \"\(outcome)\" on stdout")
        }
    }
}
