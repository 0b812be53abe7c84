import CPosix
import Foundation
import Glibc
import StageKit

/// The line a fatal signal leaves (SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGABRT):
///
///     2026-12-01T08:30:00.123Z error fatal signal SIGSEGV (invalid memory access) while running
///     job=12 stage=resize, job=13 stage=store; the daemon dies with it (...)
///
/// on stderr, and the same line in `HOME/crash.log`, which the next start reads to know
/// which jobs were running when the daemon crashed (a SIGKILL or a clean stop writes
/// nothing there). The handler is C (`CPosix/fatal_signal.h`); this file is the only
/// caller of its functions, since its state is static per calling file.
enum FatalSignalLog {
    /// What a crash file says: the signal's name and the job → stage pairs that ran.
    struct Crash: Equatable {
        var signal: String
        var running: [Int64: String]
    }

    /// Installs the handler for this process, writing to stderr and to `crashFile`
    /// (created empty; the previous crash must have been read with `takeLastCrash`).
    static func install(crashFile: String, json: Bool) throws {
        let fd: Int32
        do { fd = try syscall("open", blocking: { open(crashFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640) }) } catch let e as SystemError {
            throw PhotomemoError(.io, "cannot open \(crashFile): \(e.reason)")
        }
        pm_fatal_set_running("")
        do { try syscall("sigaction", blocking: { pm_fatal_install(2, fd, json ? 1 : 0) }) } catch let e as SystemError {
            throw PhotomemoError(.io, "cannot install the fatal-signal handler: \(e.reason)")
        }
    }

    /// Gives the calling thread (a libuv pool thread about to run a stage) an alternate
    /// signal stack, so a stack overflow in a stage still logs. A thread that has one
    /// keeps it (one sigaltstack query per stage run).
    static func prepareThisThread() {
        _ = pm_fatal_ensure_altstack()
    }

    /// The jobs running now, set on the loop thread whenever a stage run starts or ends.
    static func setRunning(_ running: [(job: Int64, stage: String)]) {
        var text = ""
        for (i, r) in running.sorted(by: { $0.job < $1.job }).enumerated() {
            let item = "job=\(r.job) stage=\(r.stage)"
            if text.utf8.count + item.utf8.count > Int(PM_FATAL_RUNNING_MAX) - 64 {
                text += ", and \(running.count - i) more"
                break
            }
            text += (text.isEmpty ? "" : ", ") + item
        }
        pm_fatal_set_running(text)
    }

    /// The crash the previous process logged in `crashFile`, if it died of a fatal signal.
    static func lastCrash(in crashFile: String) -> Crash? {
        guard let text = try? String(contentsOfFile: crashFile, encoding: .utf8),
              let range = text.range(of: "fatal signal ") else { return nil }
        let rest = text[range.upperBound...]
        let signal = String(rest.prefix { $0 != " " })
        var running: [Int64: String] = [:]
        for item in rest.split(whereSeparator: { $0 == "," || $0 == ";" }) {
            let words = item.split(separator: " ")
            guard let j = words.firstIndex(where: { $0.hasPrefix("job=") }), j + 1 < words.count,
                  words[j + 1].hasPrefix("stage="), let id = Int64(words[j].dropFirst(4)) else { continue }
            running[id] = String(words[j + 1].dropFirst(6))
        }
        return Crash(signal: signal, running: running)
    }
}
