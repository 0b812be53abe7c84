import Foundation

/// Runs one of the project's scripts (`scripts/postgres`, `scripts/seaweedfs`, `scripts/sshd`,
/// `scripts/syncthing`) to completion: (exit status, stdout, stderr). Output goes through
/// files, not pipes (`runTool`): the server a script starts outlives it and would hold a pipe open.
func projectScript(_ script: String, _ args: [String]) -> (Int32, String, String) {
    do { return try runTool([packageRoot.appendingPathComponent(script).path] + args) } catch { return (127, "", "\(error)") }
}

/// A test server that would not start or answer, with what its script said.
public struct Failure: Error, CustomStringConvertible {
    public let description: String
    init(_ d: String) { description = d }
}
