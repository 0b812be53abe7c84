import Foundation
import PhotomemoCore

let usage = """
usage: photomemo <command> [options]

commands:
\(commands.map { "  " + $0.name.padding(toLength: 10, withPad: " ", startingAt: 0) + firstSentence($0.summary) }.joined(separator: "\n"))

Run `photomemo <command> --help` for a command's options.
"""

func firstSentence(_ s: String) -> String {
    let flat = s.replacingOccurrences(of: "\n", with: " ")
    return flat.range(of: ". ").map { String(flat[..<$0.lowerBound]) + "." } ?? flat
}

func main() -> Int32 {
    var argv = CommandLine.arguments.dropFirst()
    guard let name = argv.first else {
        FileHandle.standardError.write(Data((usage + "\n").utf8))
        return 2
    }
    argv = argv.dropFirst()
    if name == "-h" || name == "--help" || name == "help" { print(usage); return 0 }
    if name == "--version" || name == "version" { print("photomemo \(PhotomemoVersion.current)"); return 0 }
    guard let command = commands.first(where: { $0.name == name }) else {
        let hint = didYouMean(name, commands.map(\.name)).map { " (did you mean \($0)?)" } ?? ""
        FileHandle.standardError.write(Data("photomemo: unknown command \"\(name)\"\(hint)\n\n\(usage)\n".utf8))
        return 2
    }
    do {
        let args = try parseArguments(argv, options: command.options)
        if args.has("help") { print(command.help, terminator: ""); return 0 }
        return try command.run(args)
    } catch let e as UsageError {
        FileHandle.standardError.write(Data("photomemo \(name): \(e)\n\n\(command.help)".utf8))
        return 2
    } catch let e as PhotomemoError {
        FileHandle.standardError.write(Data("photomemo \(name): \(e.message)\n".utf8))
        return 1
    } catch {
        FileHandle.standardError.write(Data("photomemo \(name): \(error)\n".utf8))
        return 1
    }
}

exit(main())
