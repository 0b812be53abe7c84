import Foundation
import Glibc
import Notify
import Testing

/// `Sink.exec` with real child processes: the event on stdin, a clean environment, the
/// exit status as the outcome, and a deadline that ends the child's whole process group.
@Suite struct ExecSinkTests {
    let dir: String

    init() throws {
        dir = NSTemporaryDirectory() + "pm-exec-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    func read(_ name: String) -> String { (try? String(contentsOfFile: dir + "/" + name, encoding: .utf8)) ?? "" }

    /// Waits (up to `seconds`) for `condition`; true if it held.
    func eventually(_ seconds: Double = 5, _ condition: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end { if condition() { return true }; usleep(5000) }
        return condition()
    }

    @Test func theEventComesOnStdinInACleanEnvironment() throws {
        let body = Data(#"{"op":"create","record":{"id":"r1"}}"#.utf8)
        let r = Sink.exec(command: ["/bin/sh", "-c", "cat > '\(dir)/stdin'; /usr/bin/env > '\(dir)/env'"], body: body,
                          variables: ["PHOTOMEMO_SUBSCRIPTION": "s1", "PHOTOMEMO_EVENT_ID": "s1-7"])
        #expect(r == .delivered)
        #expect(read("stdin") == String(decoding: body, as: UTF8.self) + "\n")
        let env = Dictionary(read("env").split(separator: "\n").compactMap { line -> (String, String)? in
            guard let eq = line.firstIndex(of: "=") else { return nil }
            return (String(line[..<eq]), String(line[line.index(after: eq)...]))
        }, uniquingKeysWith: { a, _ in a })
        #expect(env["PHOTOMEMO_SUBSCRIPTION"] == "s1" && env["PHOTOMEMO_EVENT_ID"] == "s1-7")
        // None of this process's own variables (the daemon's: S3 keys, failpoints, ...) but those three.
        let own = Set(ProcessInfo.processInfo.environment.keys).subtracting(["PATH", "HOME", "LANG", "PWD", "SHLVL", "_"])
        #expect(!own.isEmpty)
        #expect(own.isDisjoint(with: env.keys), "\(own.intersection(env.keys).sorted())")
        // What the shell adds itself (PWD, SHLVL, _) aside, only PATH, HOME, LANG and the given ones.
        let allowed: Set<String> = ["PATH", "HOME", "LANG", "PHOTOMEMO_SUBSCRIPTION", "PHOTOMEMO_EVENT_ID", "PWD", "SHLVL", "_"]
        #expect(Set(env.keys).subtracting(allowed).isEmpty, "\(env.keys.sorted())")
        if let path = ProcessInfo.processInfo.environment["PATH"] { #expect(env["PATH"] == path) }
    }

    @Test func aNonZeroExitIsAFailureWithTheStatusAndStderr() {
        let r = Sink.exec(command: ["/bin/sh", "-c", "echo 'receiver is full' >&2; exit 3"], body: Data("{}".utf8))
        guard case .failed(let why) = r else { Issue.record("exit 3 counted as delivered"); return }
        #expect(why.code == .retryable && !why.isOutage)  // its own failure: tried again, parked after max_attempts
        #expect(why.reason.hasPrefix("/bin/sh exited with 3"))
        #expect(why.reason.contains("receiver is full"))
    }

    /// Exit 69 (EX_UNAVAILABLE), as for an exec stage: what the sink talks to is down, an
    /// outage retried for as long as it lasts.
    @Test func exit69IsAnOutage() {
        let r = Sink.exec(command: ["/bin/sh", "-c", "echo 'mail server down' >&2; exit 69"], body: Data("{}".utf8))
        guard case .failed(let why) = r else { Issue.record("exit 69 counted as delivered"); return }
        #expect(why.code == .unavailable && why.isOutage)
        #expect(why.reason.contains("mail server down"))
    }

    @Test func aProgramThatCannotStartIsAFailure() {
        let r = Sink.exec(command: [dir + "/no-such-program"], body: Data("{}".utf8))
        guard case .failed(let why) = r else { Issue.record("a missing program counted as delivered"); return }
        #expect(why.reason.contains("no-such-program"))
    }

    @Test func theDeadlineEndsTheChildAndWhatItStarted() throws {
        let started = Date()
        // The shell starts a grandchild in its process group and waits for it.
        let r = Sink.exec(command: ["/bin/sh", "-c", "sleep 30 & echo $! > '\(dir)/pid'; wait"], body: Data("{}".utf8),
                          timeoutMs: 300)
        #expect(r == .failed(Sink.Failure(.timedOut, "/bin/sh timed out after 300 ms")))
        #expect(Date().timeIntervalSince(started) < 10)
        let pid = try #require(Int32(read("pid").trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(eventually { kill(pid, 0) != 0 && errno == ESRCH }, "the grandchild \(pid) outlived the deadline")
    }
}
