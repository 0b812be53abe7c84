import Foundation
import Glibc
import StageKit

/// Crash-injection points for the durability tests (like FreeBSD's fail(9) or TiKV's
/// fail-rs). `PHOTOMEMO_FAILPOINTS="queue.before_commit=3"` makes the process SIGKILL
/// itself the 3rd time it passes that point. `NAME@SUBJECT=segv` instead raises SIGSEGV
/// every time the point is passed for that subject — a poisonous input, e.g.
/// `stage.run@compress:bad.jpg=segv` (stage `compress` about to run on photo `bad.jpg`).
/// `NAME=pause:MS` (or `NAME@SUBJECT=pause:MS`) sleeps MS milliseconds every time the point
/// is passed (after a line on stderr saying so): a window for a test to act in.
/// Unset, a point is one dictionary lookup.
public enum Failpoint {
    enum Action: Equatable { case killAt(Int), segfault, pause(milliseconds: Int) }

    static let armed: [String: Action] = {
        guard let spec = ProcessInfo.processInfo.environment["PHOTOMEMO_FAILPOINTS"] else { return [:] }
        var out: [String: Action] = [:]
        for item in spec.split(separator: ",") {
            let parts = item.split(separator: "=")
            let value = parts.count > 1 ? String(parts[1]) : "1"
            out[String(parts[0])] = value == "segv" ? .segfault
                : value.hasPrefix("pause:") ? .pause(milliseconds: Int(value.dropFirst(6)) ?? 1000) : .killAt(Int(value) ?? 1)
        }
        return out
    }()

    /// Whether any point is armed (callers skip building subjects when not).
    public static var anyArmed: Bool { !armed.isEmpty }

    private static let hits = LockedValue<[String: Int]>([:])

    /// Points: `queue.before_commit`, `inbox.before_commit`, `stage.before_journal`,
    /// `stage.after_journal`, `store.before_rename`, `files.before_folder_fsync` (several
    /// files renamed in, their folder not fsync'd: `DurableFile.write(_:in:)`),
    /// `notify.before_send`, `upload.before_release` (the original stored, not yet released
    /// from the inbox), and `stage.run` (subject `STAGE:PHOTO`, or `STAGE:KEY` for a
    /// job without a photo).
    public static func hit(_ name: String, subject: String? = nil) {
        guard !armed.isEmpty else { return }
        if let subject, armed["\(name)@\(subject)"] == .segfault {
            StandardStream.err("failpoint \(name)@\(subject) hit: raising SIGSEGV\n")
            raise(SIGSEGV)
        }
        if case .pause(let ms)? = subject.flatMap({ armed["\(name)@\($0)"] }) ?? armed[name] {
            StandardStream.err("failpoint \(name) hit: pausing \(ms) ms\n")
            usleep(UInt32(ms) * 1000)
            return
        }
        guard case .killAt(let n)? = armed[name] else { return }
        let count = hits.withLock { h -> Int in
            h[name, default: 0] += 1
            return h[name]!
        }
        if count == n {
            StandardStream.err("failpoint \(name) hit: killing the process\n")
            kill(getpid(), SIGKILL)
        }
    }
}
