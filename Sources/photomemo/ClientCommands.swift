import ControlProtocol
import Foundation
import StageKit

/// The subcommands that talk to a running daemon through its socket.
let clientOptions: [OptionSpec] = [
    .value("home", "DIR", "the daemon's home (default: $PHOTOMEMO_HOME, else ./var)"),
    .value("socket", "PATH", "the control socket (default: HOME/photomemo.sock)"),
    .flag("json", "print the raw result as JSON"),
]

func clientCommand(_ name: String, _ synopsis: String, _ summary: String, extra: [OptionSpec] = [], positionals: ClosedRange<Int> = 0...0,
                   _ body: @escaping @Sendable (ControlClient, ParsedArguments) throws -> Int32) -> Command {
    Command(name: name, synopsis: synopsis, summary: summary, options: clientOptions + extra) { args in
        guard positionals.contains(args.positionals.count) else {
            throw UsageError(positionals.upperBound == 0 ? "\(name) takes no arguments" : "usage: photomemo \(name) \(synopsis)")
        }
        return try body(ControlClient(args), args)
    }
}

extension ControlClient {
    /// `--socket PATH`, else `HOME/photomemo.sock` with HOME from `--home` or `$PHOTOMEMO_HOME` (default ./var).
    convenience init(_ args: ParsedArguments) {
        let home = homeFolder(args)
        self.init(socketPath: args.value("socket") ?? (home as NSString).appendingPathComponent("photomemo.sock"), home: home)
    }
}

func jobID(_ s: String) throws -> JSONValue {
    guard let id = Int64(s), id > 0 else { throw UsageError("a job ID is a positive integer, got \"\(s)\"") }
    return .int(id)
}

func simpleCommand(_ command: ControlCommand, _ synopsis: String, _ summary: String, positionals: ClosedRange<Int>,
                   _ request: @escaping @Sendable ([String]) throws -> [String: JSONValue],
                   _ describe: @escaping @Sendable (JSONValue) -> String) -> Command {
    clientCommand(command.rawValue, synopsis, summary, positionals: positionals) { c, args in
        let r = try c.request(command, try request(args.positionals))
        if args.has("json") { Output.json(r) } else { Output.line(describe(r)) }
        return 0
    }
}

let retryCommand = jobControlCommand(.retry, states: ["failed", "cancelled"], done: "retried",
    "Runs a failed or cancelled job again from the stage where it stopped, with fresh attempts; with --state, every such job you may retry.")
let cancelCommand = jobControlCommand(.cancel, states: ["queued", "waiting"], done: "cancelled",
    "Ends a queued, waiting or running job (a running stage finishes; its outcome is dropped); with --state, every queued or waiting job you may cancel.")

/// `retry`/`cancel`: one job by ID, or every job in a state (narrowed by stage and time),
/// a user's own or, for an admin, everyone's.
func jobControlCommand(_ command: ControlCommand, states: [String], done: String, _ summary: String) -> Command {
    let name = command.rawValue
    return clientCommand(name, "ID | --state \(states.joined(separator: "|")) [--stage S] [--since TIME]", summary, extra: [
        .value("state", "STATE", "act on every job in STATE (\(states.joined(separator: " or "))) instead of one ID"),
        .value("stage", "STAGE", "with --state: only jobs at (stopped at) STAGE"),
        .value("since", "TIME", "with --state: only jobs whose state changed at or after TIME (ISO-8601, 2026-12-03T01:00:00Z)"),
    ], positionals: 0...1) { c, args in
        let filters = ["stage", "since"].filter { args.value($0) != nil }
        var request: [String: JSONValue]
        if let state = args.value("state") {
            guard args.positionals.isEmpty else { throw UsageError("\(name) takes an ID or --state, not both") }
            guard states.contains(state) else { throw UsageError("\(name) --state takes \(states.joined(separator: " or ")), got \"\(state)\"") }
            request = [ControlArgument.state: .string(state)]
            for f in filters { request[f] = .string(args.value(f)!) }
        } else {
            guard filters.isEmpty else { throw UsageError("--\(filters[0]) narrows --state; give --state too") }
            guard args.positionals.count == 1 else { throw UsageError("\(name) needs a job ID or --state") }
            request = [ControlArgument.job: try jobID(args.positionals[0])]
        }
        let r: JSONValue
        do { r = try c.request(command, request) } catch let e as PhotomemoError where e.code == .badRequest { throw UsageError(e.message) }
        if args.has("json") { Output.json(r); return 0 }
        guard let changed = r["changed"]?.intValue else {
            Output.line("job \(r["job"]?.intValue ?? 0) \(r["state"]?.stringValue ?? done)")
            return 0
        }
        Output.line("\(changed) \(changed == 1 ? "job" : "jobs") \(done)")
        for refusal in r["refused"]?.arrayValue ?? [] {
            StandardStream.err("job \(refusal["job"]?.intValue ?? 0) not \(done): \(refusal["error"]?.stringValue ?? "")\n")
        }
        let total = r["refused_total"]?.intValue ?? 0, listed = Int64(r["refused"]?.arrayValue?.count ?? 0)
        if total > listed { StandardStream.err("and \(total - listed) more not \(done)\n") }
        if let stopped = r["stopped"]?.stringValue { StandardStream.err("stopped: \(stopped)\n") }
        return total > 0 || r["stopped"]?.stringValue != nil ? 1 : 0
    }
}
func pauseText(_ r: JSONValue) -> String {
    let stages = (r["paused_stages"]?.arrayValue ?? []).compactMap(\.stringValue)
    return (r["paused"] == .bool(true) ? "paused" : "running") + (stages.isEmpty ? "" : "; paused stages: " + stages.joined(separator: ", "))
}
let pauseCommand = simpleCommand(.pause, "[STAGE]", "Stops new stage runs (all, or one stage); running ones finish. Survives restarts.",
                                 positionals: 0...1, { $0.first.map { ["stage": .string($0)] } ?? [:] }, pauseText)
let resumeCommand = simpleCommand(.resume, "[STAGE]", "Undoes pause (all, or one stage).",
                                  positionals: 0...1, { $0.first.map { ["stage": .string($0)] } ?? [:] }, pauseText)
let reloadCommand = simpleCommand(.reload, "", "Re-reads the job definition (like SIGHUP); a bad file is reported and the old one stays.",
                                  positionals: 0...0, { _ in [:] }) { r in
    "reloaded \(r["name"]?.stringValue ?? "?") from \(r["source"]?.stringValue ?? "?"): " + (r["stages"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: " → ")
}
