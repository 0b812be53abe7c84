import Foundation

/// Runs one of the project's scripts (`scripts/postgres`, `scripts/seaweedfs`) to
/// completion: (exit status, stdout, stderr). Output goes through files, not pipes: the
/// server a script starts outlives it and would hold a pipe open.
func projectScript(_ script: String, _ args: [String]) -> (Int32, String, String) {
    let base = NSTemporaryDirectory() + "pm-script-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    _ = FileManager.default.createFile(atPath: base + ".out", contents: nil)
    _ = FileManager.default.createFile(atPath: base + ".err", contents: nil)
    defer { unlink(base + ".out"); unlink(base + ".err") }
    let p = Process()
    p.executableURL = packageRoot.appendingPathComponent(script)
    p.arguments = args
    p.standardOutput = FileHandle(forWritingAtPath: base + ".out")
    p.standardError = FileHandle(forWritingAtPath: base + ".err")
    do { try p.run() } catch { return (127, "", "\(error)") }
    p.waitUntilExit()
    return (p.terminationStatus, (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? "",
            (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? "")
}

/// A test server that would not start or answer, with what its script said.
public struct Failure: Error, CustomStringConvertible {
    public let description: String
    init(_ d: String) { description = d }
}
