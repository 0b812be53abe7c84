import Foundation
import PhotomemoCore
import StageKit

/// The longest command's name and two spaces: `subscriptions` ran into its summary.
let nameWidth = (commands.map(\.name.count).max() ?? 0) + 2

let usage = """
usage: photomemo <command> [options]

commands:
\(commands.map { "  " + $0.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0) + firstSentence($0.summary) }.joined(separator: "\n"))

Run `photomemo <command> --help` for a command's options.
"""

/// Up to the first ". ", not counting an "e.g. " or "i.e. " inside the sentence.
func firstSentence(_ s: String) -> String {
    let flat = s.replacingOccurrences(of: "\n", with: " ")
    var from = flat.startIndex
    while let r = flat.range(of: ". ", range: from..<flat.endIndex) {
        if !flat[..<r.lowerBound].hasSuffix("e.g"), !flat[..<r.lowerBound].hasSuffix("i.e") {
            return String(flat[..<r.lowerBound]) + "."
        }
        from = r.upperBound
    }
    return flat
}

func main() -> Int32 {
    var argv = CommandLine.arguments.dropFirst()
    guard let name = argv.first else {
        StandardStream.err((usage + "\n"))
        return 2
    }
    argv = argv.dropFirst()
    if name == "-h" || name == "--help" || name == "help" { print(usage); return 0 }
    if name == "--version" || name == "version" { print("photomemo \(PhotomemoVersion.current)"); return 0 }
    guard let command = commands.first(where: { $0.name == name }) else {
        let hint = didYouMean(name, commands.map(\.name)).map { " (did you mean \($0)?)" } ?? ""
        StandardStream.err("photomemo: unknown command \"\(name)\"\(hint)\n\n\(usage)\n")
        return 2
    }
    do {
        let args = try parseArguments(argv, options: command.options)
        if args.has("help") { print(command.help, terminator: ""); return 0 }
        return try command.run(args)
    } catch let e as UsageError {
        StandardStream.err("photomemo \(name): \(e)\n\n\(command.help)")
        return 2
    } catch let e as PhotomemoError {
        StandardStream.err("photomemo \(name): \(Output.text(e.message))\n")
        return 1
    } catch {
        StandardStream.err("photomemo \(name): \(error)\n")
        return 1
    }
}

exit(main())
