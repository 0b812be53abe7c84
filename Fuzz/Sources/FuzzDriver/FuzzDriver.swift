#if canImport(Glibc)
import Glibc
#endif

// SwiftPM links every executable with `main` aliased to the module's own entry point, so
// libFuzzer's `main` cannot be the one that runs. Each target's main.swift calls
// `runFuzzer` instead, which hands the one-input function to libFuzzer's documented
// custom-main entry, LLVMFuzzerRunDriver (same flags, corpus and artifacts as its `main`).
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The one-input function: set once before libFuzzer starts, read only on its thread.
nonisolated(unsafe) private var testOneInput: ((UnsafeRawBufferPointer) -> Void)?

/// Runs libFuzzer with the process's arguments on `body`, which must trap (fatalError,
/// a failed precondition, a sanitizer report) on a bug and return on any input it
/// handles correctly, including one it rightly refuses.
public func runFuzzer(_ body: @escaping (UnsafeRawBufferPointer) -> Void) -> Never {
    testOneInput = body
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    let status = LLVMFuzzerRunDriver(&argc, &argv) { data, size in
        testOneInput?(UnsafeRawBufferPointer(start: data, count: size))
        return 0
    }
    exit(status)
}

/// An input as text, the way the daemon would see it: invalid UTF-8 replaced, as reading a
/// line into a String does.
public func text(_ bytes: UnsafeRawBufferPointer) -> String {
    String(decoding: bytes, as: UTF8.self)
}

/// Stops the run with a message libFuzzer prints above its crash report.
public func bug(_ message: String) -> Never {
    fatalError("fuzz oracle: \(message)")
}
