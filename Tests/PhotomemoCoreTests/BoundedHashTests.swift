import Foundation
import Glibc
import Testing
@testable import PhotomemoCore
@testable import StageKit

/// Intake hashes no more than the bytes it sized (`SHA256.hex(ofOpenFile:path:size:)`).
@Suite struct BoundedHashTests {
    let dir = NSTemporaryDirectory() + "pm-hash-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"

    /// A file grown sparse to a terabyte just after intake sized it was read to its end:
    /// intake, the socket's enqueue and SIGTERM waited on its owner. Only the bytes sized are
    /// read, and a file that holds more or fewer is no hash (it comes back as a changed file).
    @Test func aFileThatGrowsOrShrinksWhileHashedIsReadNoFurtherThanItsSize() throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/grow.jpg"
        let bytes = Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0) })
        try bytes.write(to: URL(fileURLWithPath: file))
        func hash(_ size: Int64) throws -> String? {
            let fd = open(file, O_RDONLY)
            defer { close(fd) }
            return try SHA256.hex(ofOpenFile: fd, path: file, size: size)
        }
        #expect(try hash(Int64(bytes.count)) == SHA256.hex(bytes))
        #expect(try hash(Int64(bytes.count) + 1) == nil)  // shrank below what was sized
        let started = Date()
        #expect(truncate(file, 1 << 40) == 0)  // sparse: no disk used
        #expect(try hash(Int64(bytes.count)) == nil)
        #expect(Date().timeIntervalSince(started) < 2, "read past the size it was given")
    }
}
