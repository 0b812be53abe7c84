import Foundation
import StageKit

/// `photomemo completion bash|zsh`: the shell's completion script, written from the command
/// table, so a new command or option completes as soon as it is in the table.
let completionCommand = Command(
    name: "completion", synopsis: "bash|zsh",
    summary: """
    Prints the shell completion script for bash or zsh, made from this build's commands and options.
    Load it with: source <(photomemo completion bash), or put the output of `photomemo completion zsh`
    in a folder of $fpath as _photomemo. The Debian package installs both.
    """,
    options: [],
    run: { args in
        switch args.positionals.first {
        case "bash" where args.positionals.count == 1: print(bashCompletion(), terminator: "")
        case "zsh" where args.positionals.count == 1: print(zshCompletion(), terminator: "")
        default: throw UsageError("completion needs one shell: bash or zsh")
        }
        return 0
    },
    words: ["bash", "zsh"])

/// What a shell offers for an option's value, by its placeholder: folders, files, or a fixed list.
enum ValueCompletion {
    case folders, files, words([String]), anything

    init(placeholder: String) {
        switch placeholder {
        case "DIR": self = .folders
        case "FILE", "PATH": self = .files
        case "LEVEL": self = .words(LogLevel.allCases.map { "\($0)" })
        case "FORMAT": self = .words(["text", "json"])
        default: self = .anything
        }
    }
}

func optionWord(_ o: OptionSpec) -> String { (o.name.count == 1 ? "-" : "--") + o.name }

func bashCompletion() -> String {
    let top = (commands.map(\.name) + ["--help", "--version"]).joined(separator: " ")
    var cases = ""
    for c in commands {
        let words = (c.options.map(optionWord) + ["--help"]).joined(separator: " ")
        cases += "        \(c.name)) opts=\"\(words)\"; args=\"\(c.words.joined(separator: " "))\"\n"
        for o in c.options { if let p = o.value { cases += "            [ \"$prev\" = \(optionWord(o)) ] && value=\(bashValue(ValueCompletion(placeholder: p)))\n" } }
        cases += "            ;;\n"
    }
    return """
    # bash completion for photomemo, written by `photomemo completion bash` from its command table.
    _photomemo() {
        local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} opts="" args="" value=""
        COMPREPLY=()
        if [ "$COMP_CWORD" -eq 1 ]; then
            COMPREPLY=($(compgen -W "\(top)" -- "$cur"))
            return
        fi
        case ${COMP_WORDS[1]} in
    \(cases)        *) return ;;
        esac
        case $value in
            folders) COMPREPLY=($(compgen -d -- "$cur")); return ;;
            files) COMPREPLY=($(compgen -f -- "$cur")); return ;;
            words:*) COMPREPLY=($(compgen -W "${value#words:}" -- "$cur")); return ;;
            anything) return ;;
        esac
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        elif [ -n "$args" ]; then
            COMPREPLY=($(compgen -W "$args" -- "$cur"))
        else
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
    }
    complete -o filenames -F _photomemo photomemo

    """
}

private func bashValue(_ v: ValueCompletion) -> String {
    switch v {
    case .folders: return "folders"
    case .files: return "files"
    case .words(let w): return "\"words:\(w.joined(separator: " "))\""
    case .anything: return "anything"
    }
}

func zshCompletion() -> String {
    var described = "", cases = ""
    for c in commands {
        described += "        \(zshQuote(c.name + ":" + firstSentence(c.summary)))\n"
        var specs = c.options.map { o -> String in
            let spec = (o.repeats ? "*" : "") + optionWord(o) + "[\(zshText(o.help))]"
            return zshQuote(o.value.map { spec + ":\($0):" + zshValue(ValueCompletion(placeholder: $0)) } ?? spec)
        }
        specs.append(zshQuote("(- *)--help[show this help]"))
        specs.append(zshQuote("*:argument:" + (c.words.isEmpty ? "_files" : "(\(c.words.joined(separator: " ")))")))
        cases += "        \(c.name)) _arguments -s \\\n            " + specs.joined(separator: " \\\n            ") + " ;;\n"
    }
    return """
    #compdef photomemo
    # zsh completion for photomemo, written by `photomemo completion zsh` from its command table.
    _photomemo() {
        local -a cmds
        cmds=(
    \(described)    )
        if (( CURRENT == 2 )); then
            _describe -t commands 'photomemo command' cmds
            return
        fi
        shift words
        (( CURRENT-- ))
        case $words[1] in
    \(cases)    esac
    }
    _photomemo "$@"

    """
}

private func zshValue(_ v: ValueCompletion) -> String {
    switch v {
    case .folders: return "_files -/"
    case .files: return "_files"
    case .words(let w): return "(\(w.joined(separator: " ")))"
    case .anything: return " "
    }
}

/// A description inside an option's `[...]`: brackets are zsh's syntax there.
private func zshText(_ s: String) -> String {
    s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "[", with: "\\[").replacingOccurrences(of: "]", with: "\\]")
}

private func zshQuote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
