import Foundation
import PhotomemoCore

/// `photomemo manual`: the manual page in roff, from the command table (what `--help` prints)
/// and ManualText; the Debian package installs it as photomemo(1).
let manualCommand = Command(
    name: "manual", synopsis: "",
    summary: "Prints the manual page, photomemo(1), in roff: read it with photomemo manual | man -l -. The Debian package installs it.",
    options: [],
    run: { args in
        guard args.positionals.isEmpty else { throw UsageError("manual takes no arguments") }
        print(manualPage(), terminator: "")
        return 0
    })

func manualPage() -> String {
    // No hyphenation, ragged right: option names and paths stay whole.
    var s = ".TH PHOTOMEMO 1 \"\" \"photomemo \(PhotomemoVersion.current)\" \"User Commands\"\n.nh\n.ad l\n"
    s += ".SH NAME\n\(roff(ManualText.name))\n"
    s += ".SH SYNOPSIS\n.B photomemo\n.I command\n[\\fIoptions\\fR]\n.br\n.B photomemo\n\\-\\-help | \\-\\-version\n"
    s += ".SH DESCRIPTION\n\(roff(ManualText.description))\n"
    s += ".SH COMMANDS\n"
    for c in commands {
        s += ".SS \(c.name)\n.B photomemo \(c.name)\n\(roff(c.synopsis))\n.PP\n\(roff(c.summary))\n"
        for o in c.options {
            let value = o.value.map { " \\fI\(roff($0))\\fR" } ?? ""
            s += ".TP\n.B \(roff(optionWord(o)))\(value)\(o.repeats ? " ..." : "")\n\(roff(o.help))\n"
        }
        s += ".TP\n.B \\-h, \\-\\-help\nshow this command's help\n"
    }
    s += ".SH HOME\nThe daemon keeps everything in its home: \\-\\-home DIR, else $PHOTOMEMO_HOME, else ./var "
    s += "(the packaged unit's is /var/lib/photomemo). It must not be writable by other users; it is created mode 0750.\n"
    s += section(nil, ManualText.home)
    s += section("EXIT STATUS", ManualText.exitStatus) + section("SIGNALS", ManualText.signals)
    s += section("ENVIRONMENT", ManualText.environment) + section("FILES", ManualText.files)
    return s + ".SH SEE ALSO\n\(roff(ManualText.seeAlso))\n"
}

private func section(_ title: String?, _ entries: [(String, String)]) -> String {
    (title.map { ".SH \($0)\n" } ?? "") + entries.map { ".TP\n.B \(roff($0.0))\n\(roff($0.1))\n" }.joined()
}

/// Text as roff reads it literally: backslashes and hyphens escaped, no line taken for a request.
func roff(_ text: String) -> String {
    text.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
        .split(separator: "\n", omittingEmptySubsequences: false)
        .map { $0.hasPrefix(".") || $0.hasPrefix("'") ? "\\&" + $0 : String($0) }
        .joined(separator: "\n")
}
