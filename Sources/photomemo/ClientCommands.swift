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

let retryCommand = simpleCommand(.retry, "ID", "Runs a failed or cancelled job again from the stage where it stopped, with fresh attempts.",
                                 positionals: 1...1, { [ControlArgument.job: try jobID($0[0])] }) { "job \($0["job"]?.intValue ?? 0) \($0["state"]?.stringValue ?? "")" }
let cancelCommand = simpleCommand(.cancel, "ID", "Ends a queued, waiting or running job (a running stage finishes; its outcome is dropped).",
                                  positionals: 1...1, { [ControlArgument.job: try jobID($0[0])] }) { "job \($0["job"]?.intValue ?? 0) cancelled" }
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
