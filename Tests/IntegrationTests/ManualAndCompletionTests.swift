import Foundation
import TestSupport
import Testing

/// The manual page and the bash and zsh completion are written from the command table: every
/// command `photomemo --help` lists, with every option its `--help` lists, is in each of them.
@Suite struct ManualAndCompletionTests {
    /// The commands `photomemo --help` lists, each with the options its own `--help` lists.
    static func helpTable() throws -> [(name: String, options: [String])] {
        let (status, usage, _) = try DaemonHarness.run(["--help"])
        try #require(status == 0)
        let names = usage.split(separator: "\n").drop { $0 != "commands:" }.dropFirst()
            .prefix { $0.hasPrefix("  ") }.map { String($0.split(separator: " ")[0]) }
        try #require(names.count > 20, "photomemo --help lists the commands")
        return try names.map { name in
            let (s, help, _) = try DaemonHarness.run([name, "--help"])
            try #require(s == 0, "photomemo \(name) --help")
            // "  --home DIR   text", "  -h, --help   text": the words of the left column that start with "-".
            let options = help.split(separator: "\n").filter { $0.hasPrefix("  -") }.flatMap { line in
                line.split(separator: " ").map { $0.replacingOccurrences(of: ",", with: "") }.prefix { $0.hasPrefix("-") || $0.uppercased() == $0 }
                    .filter { $0.hasPrefix("-") }
            }
            return (name, options)
        }
    }

    func write(_ text: String, _ name: String) throws -> String {
        let path = NSTemporaryDirectory() + "pm-\(getpid())-\(UInt32.random(in: 0...UInt32.max))-\(name)"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func theManualPageHasEveryCommandAndOptionAndRendersWithoutWarnings() throws {
        let table = try Self.helpTable()
        let (status, page, _) = try DaemonHarness.run(["manual"])
        try #require(status == 0)
        // One subsection per command, in the table's order, naming each of its options.
        let sections = page.components(separatedBy: "\n.SS ").dropFirst()
        #expect(sections.map { String($0.prefix { $0 != "\n" }) } == table.map(\.name))
        for (section, command) in zip(sections, table) {
            for option in command.options {
                #expect(section.contains(option.replacingOccurrences(of: "-", with: "\\-")), "man page, \(command.name): \(option)")
            }
        }
        for heading in ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "HOME", "EXIT STATUS", "ENVIRONMENT", "FILES"] {
            #expect(page.contains("\n.SH \(heading)\n"), "man page section \(heading)")
        }
        // man -l renders it as an operator reads it; groff says nothing about the roff.
        let file = try write(page, "photomemo.1")
        defer { unlink(file) }
        let man = try realTool("man", package: "man-db")
        let (s, text, warnings) = try runTool([man, "--warnings", "-l", file], environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C", "MANWIDTH": "100"])
        #expect(s == 0)
        #expect(warnings.isEmpty, "groff: \(warnings)")
        for command in table { #expect(text.contains("photomemo \(command.name)"), "rendered: photomemo \(command.name)") }
        #expect(text.contains("/var/lib/photomemo") && text.contains("PHOTOMEMO_HOME") && text.contains("photomemo.sqlite"))
    }

    @Test func bashCompletesEveryCommandAndEveryOptionOfEach() throws {
        let table = try Self.helpTable()
        let (status, script, _) = try DaemonHarness.run(["completion", "bash"])
        try #require(status == 0)
        let file = try write(script, "photomemo.bash")
        defer { unlink(file) }
        // What bash offers after `photomemo ` and after `photomemo NAME --`, one line each.
        var probe = "source \(file)\ncomplete_words() { COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _photomemo; echo \"${COMPREPLY[*]}\"; }\n"
        probe += "complete_words photomemo ''\n"
        for command in table { probe += "complete_words photomemo \(command.name) --\n" }
        probe += "complete_words photomemo completion ''\ncomplete_words photomemo serve --log-level ''\n"
        let bash = try realTool("bash", package: "bash")
        let (s, out, err) = try runTool([bash, "-c", probe])
        try #require(s == 0, "bash: \(err)")
        let lines = out.split(separator: "\n", omittingEmptySubsequences: false).map { Set($0.split(separator: " ").map(String.init)) }
        try #require(lines.count >= table.count + 3)
        #expect(lines[0] == Set(table.map(\.name) + ["--help", "--version"]))
        for (i, command) in table.enumerated() {
            #expect(lines[i + 1] == Set(command.options.filter { $0.hasPrefix("--") }), "bash, photomemo \(command.name) --")
        }
        #expect(lines[table.count + 1] == ["bash", "zsh"])
        #expect(lines[table.count + 2] == ["debug", "info", "notice", "warning", "error"])
    }

    @Test func zshCompletionIsValidAndHasEveryCommandAndOptionOfEach() throws {
        let table = try Self.helpTable()
        let (status, script, _) = try DaemonHarness.run(["completion", "zsh"])
        try #require(status == 0)
        #expect(script.hasPrefix("#compdef photomemo\n"))
        let file = try write(script, "_photomemo")
        defer { unlink(file) }
        let zsh = try realTool("zsh", package: "zsh")
        let (s, _, err) = try runTool([zsh, "-n", file])
        #expect(s == 0 && err.isEmpty, "zsh -n: \(err)")
        // The command list, then one `NAME) _arguments ...` branch per command with its option specs.
        for command in table {
            #expect(script.contains("\n        '\(command.name):"), "zsh command list: \(command.name)")
            let branch = try #require(script.components(separatedBy: "\n        \(command.name)) _arguments").dropFirst().first,
                                      "zsh branch for \(command.name)")
            let specs = branch.components(separatedBy: " ;;\n")[0]
            for option in command.options where option.hasPrefix("-") && option != "-h" {
                #expect(specs.contains("'\(option)[") || specs.contains("'*\(option)[") || specs.contains(")\(option)["),
                        "zsh, \(command.name): \(option)")
            }
        }
    }
}
