import Glibc
import StageKit

/// Reads the `size` bytes left in `fd` (`path` names it in errors) in 1 MiB chunks, then
/// tries one byte more: false when the file holds more or fewer (it grew or shrank: not the
/// file that was sized). Never more than `size` and one byte are read, so a file grown
/// sparse to a terabyte as it is read holds no one up (intake's hash, the store's copy).
public func readSized(_ fd: Int32, path: String, size: Int64, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
    defer { buffer.deallocate() }
    var left = size
    while true {
        let want = left > 0 ? Int(min(Int64(buffer.count), left)) : 1
        let n = try syscall("read \(path)", blocking: { Glibc.read(fd, buffer.baseAddress, want) })
        if left == 0 { return n == 0 }
        if n == 0 { return false }
        left -= Int64(n)
        try body(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
    }
}
