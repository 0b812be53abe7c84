import CommentStage
import CompressStage
import UploadStage
import ExecStage
import IndexStage
import NotifyStage
import Foundation
import StageKit
import Runtime
import ValidateStage

/// Every stage this build knows, registered once.
let registry = StageRegistry([ValidateStage.self, CompressStage.self, CommentStage.self, UploadStage.self, IndexStage.self, NotifyStage.self,
                              ExecStage.self])

struct Command: Sendable {
    let name: String
    let synopsis: String
    let summary: String
    let options: [OptionSpec]
    let run: @Sendable (ParsedArguments) throws -> Int32
    /// The words its positional arguments may be, for shell completion (`completion`: bash, zsh).
    var words: [String] = []

    var help: String {
        var s = "usage: photomemo \(name) \(synopsis)\n\n\(summary)\n"
        if !options.isEmpty {
            s += "\noptions:\n"
            for o in options {
                let left = (o.name.count == 1 ? "-" : "--") + o.name + (o.value.map { " \($0)" } ?? "") + (o.repeats ? " ..." : "")
                s += "  " + left.padding(toLength: 26, withPad: " ", startingAt: 0) + o.help + "\n"
            }
        }
        return s + "  " + "-h, --help".padding(toLength: 26, withPad: " ", startingAt: 0) + "show this help\n"
    }
}

let commands: [Command] = [
    serveCommand, checkCommand, stagesCommand, statusCommand, jobsCommand, jobCommand, watchCommand, enqueueCommand,
    retryCommand, cancelCommand, pauseCommand, resumeCommand, reloadCommand, metricsCommand, hostsCommand, inboxCommand,
    queryCommand, getCommand, updateCommand, deleteCommand, trashCommand, restoreRecordCommand, assetCommand, changesCommand, reprocessCommand,
    subscribeCommand, unsubscribeCommand, subscriptionsCommand, galleryCommand, backupCommand, restoreCommand, verifyCommand,
    completionCommand, manualCommand,
]

let serveCommand = Command(
    name: "serve", synopsis: "[--home DIR] [--job FILE] [--allow-root DIR]... [options]",
    summary: """
    Runs the daemon: watches HOME/inbox and HOME/queue.jsonl and runs each job through the
    stages of the job definition. Stops on SIGTERM/SIGINT after running stages finish;
    SIGHUP re-reads the job definition.
    """,
    options: [
        .value("home", "DIR", "home folder (default: $PHOTOMEMO_HOME, else ./var)"),
        .value("job", "FILE", "job definition (default: the built-in photo-memo definition)"),
        .value("allow-root", "DIR", "also accept absolute photo paths under DIR", repeats: true),
        .value("log-level", "LEVEL", "debug, info, notice, warning (default), error; or $PHOTOMEMO_LOG"),
        .flag("verbose", "same as --log-level info"),
        .value("rescan-interval", "SECONDS", "full inbox rescan period, a safety net for missed events (default 60)"),
        .value("settle", "SECONDS", "a file found by a rescan is taken once unchanged this long (default 2)"),
        .value("grace", "SECONDS", "on SIGTERM, how long running stages may finish (default 30)"),
        .value("sink-timeout", "SECONDS", "an exec sink (subscribe --exec) is killed with its process group after this (default 30)"),
        .flag("allow-private-webhooks", "let users' webhooks point at loopback, link-local and private addresses (admins' always may)"),
        .value("socket-group", "GROUP", "make the control socket 0660 and owned by GROUP (default: 0600, this user only)"),
        .value("database", "URL", "where the journal and records live: sqlite:FILE or postgres://USER@HOST:PORT/DB (default: the job definition's \"database\")"),
        .value("host-id", "NAME", "this daemon's name among those sharing a PostgreSQL database (default: the machine's name and a hash of the home)"),
        .value("lease", "SECONDS", "on PostgreSQL, how long a claimed job stays this daemon's without renewal (default 30)"),
        .value("store", "URL", "the asset store: file:DIR or s3://BUCKET[/PREFIX]?endpoint=URL&region=R (default: the job definition's \"store\")"),
        .value("log-format", "FORMAT", "text (default) or json: one JSON object per log line"),
        .value("http", "ADDR", "serve GET /metrics and /health over HTTP at ADDR: HOST:PORT, [IPV6]:PORT, or PORT on 127.0.0.1 (default: off)"),
    ],
    run: { args in
        guard args.positionals.isEmpty else { throw UsageError("serve takes no arguments (got \(args.positionals[0]))") }
        if let level = args.value("log-level") ?? ProcessInfo.processInfo.environment["PHOTOMEMO_LOG"] {
            guard let l = LogLevel(name: level) else { throw UsageError("unknown log level \"\(level)\"") }
            Log.level = l
        }
        if args.has("verbose") { Log.level = min(Log.level, .info) }
        var options = Daemon.Options(home: homeFolder(args), jobFile: args.value("job"))
        options.allowRoots = args.all("allow-root")
        options.database = args.value("database")
        options.store = args.value("store")
        options.hostID = args.value("host-id")
        options.leaseSeconds = try args.seconds("lease") ?? options.leaseSeconds
        guard options.leaseSeconds >= 1 else { throw UsageError("--lease must be at least 1 second") }
        options.rescanSeconds = try args.seconds("rescan-interval") ?? options.rescanSeconds
        options.settleSeconds = try args.seconds("settle") ?? options.settleSeconds
        options.graceSeconds = try args.seconds("grace") ?? options.graceSeconds
        options.sinkTimeoutSeconds = try args.seconds("sink-timeout") ?? options.sinkTimeoutSeconds
        options.allowPrivateWebhooks = args.has("allow-private-webhooks")
        if let http = args.value("http") {
            if let problem = Daemon.checkHTTPAddress(http) { throw UsageError(problem) }
            options.http = http
        }
        guard options.sinkTimeoutSeconds > 0 else { throw UsageError("--sink-timeout must be positive") }
        guard options.rescanSeconds >= 0.1 else { throw UsageError("--rescan-interval must be at least 0.1") }
        if let g = args.value("socket-group") {
            guard let gr = getgrnam(g) else { throw UsageError("no group named \"\(g)\"") }
            options.socketGroup = gr.pointee.gr_gid
        }
        switch args.value("log-format") ?? "text" {
        case "text": Log.format = .text
        case "json": Log.format = .json
        case let f: throw UsageError("--log-format must be text or json, got \"\(f)\"")
        }
        return try Daemon(options: options, registry: registry).run()
    })

let checkCommand = Command(
    name: "check", synopsis: "FILE",
    summary: "Validates a job definition without starting anything: stages, option names, types and values.",
    options: [],
    run: { args in
        guard args.positionals.count == 1 else { throw UsageError("check needs exactly one FILE") }
        let def = try Daemon.loadDefinition(file: args.positionals[0], registry: registry, home: Home(homeFolder(args)))
        print("\(args.positionals[0]): ok: job \"\(def.name)\"")
        for s in def.stages { print("  \(s.name) (concurrency \(s.concurrency))") }
        print("  retry: up to \(def.retry.maxAttempts) attempts, back-off \(def.retry.baseMs)–\(def.retry.maxMs) ms with full jitter")
        print("  a memo waits up to \(def.joinTimeoutSeconds) s for its photo")
        return 0
    })

let stagesCommand = Command(
    name: "stages", synopsis: "",
    summary: "Lists the stages this build registers, with their options (what a job definition's \"with\" accepts), and the options of the definition's \"inbox\".",
    options: [
        .value("markdown", "STAGE", "print STAGE's README (Plugins/NAME/README.md: its declarations and options table) as Markdown"),
    ],
    run: { args in
        if let name = args.value("markdown") {
            guard let stage = registry[name] else {
                throw PhotomemoError(.badUsage, "no stage \"\(name)\"; stages: \(registry.names.joined(separator: ", "))")
            }
            print(StageReadme.markdown(stage), terminator: "")
            return 0
        }
        for name in registry.names {
            let t = registry[name]!
            print("\(name): \(t.summary)")
            for o in t.options {
                let def = o.defaultValue.map { " (default \($0.jsonString))" } ?? " (required)"
                print("    \(o.name): \(o.kind.rawValue)\(def) — \(o.description)")
            }
        }
        print("inbox (the job definition's \"inbox\" object):")
        for (key, meaning) in InboxOptions.descriptions { print("    \(key): \(meaning)") }
        return 0
    })

func homeFolder(_ args: ParsedArguments) -> String {
    args.value("home") ?? ProcessInfo.processInfo.environment["PHOTOMEMO_HOME"] ?? "var"
}
