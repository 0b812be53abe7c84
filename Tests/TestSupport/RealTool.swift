import Foundation

/// The absolute path of a real tool a test runs (`rsync`, `rclone`, `sftp`, `syncthing`),
/// found on `PATH` (and the sbin folders, for `sshd`). A missing tool fails the test that
/// needs it with the package to install; it never skips it: CI installs them (scripts/setup).
public func realTool(_ name: String, package: String) throws -> String {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for dir in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"] {
        let candidate = dir + "/" + name
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    throw Failure("\(name) is not installed, and this test runs the real tool: apt-get install \(package) (scripts/setup installs it)")
}

/// Runs `argv` to completion with output in files (a server the tool starts, or an ssh
/// connection it shares, could hold a pipe open): (exit status, stdout, stderr).
public func runTool(_ argv: [String], environment: [String: String]? = nil) throws -> (Int32, String, String) {
    let base = NSTemporaryDirectory() + "pm-tool-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    _ = FileManager.default.createFile(atPath: base + ".out", contents: nil)
    _ = FileManager.default.createFile(atPath: base + ".err", contents: nil)
    defer { unlink(base + ".out"); unlink(base + ".err") }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: argv[0])
    p.arguments = Array(argv.dropFirst())
    if let environment { p.environment = environment }
    p.standardInput = FileHandle.nullDevice
    p.standardOutput = FileHandle(forWritingAtPath: base + ".out")
    p.standardError = FileHandle(forWritingAtPath: base + ".err")
    try p.run()
    p.waitUntilExit()
    return (p.terminationStatus, (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? "",
            (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? "")
}
