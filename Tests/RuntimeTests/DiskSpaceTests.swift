import Foundation
import Glibc
import StageKit
@testable import Runtime
import Testing

/// Which outcomes a full disk turns into the `disk` outage, on a real full filesystem.
@Suite struct DiskSpaceTests {
    /// A tmpfs of its own, filled to the last byte (needs root); the closure unmounts it.
    static func fullDisk(_ path: String) throws -> () -> Void {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        func run(_ args: [String]) throws -> Int32 {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: args[0])
            p.arguments = Array(args.dropFirst())
            try p.run()
            p.waitUntilExit()
            return p.terminationStatus
        }
        try #require(try run(["/bin/mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", path]) == 0, "cannot mount a tmpfs")
        let fd = open(path + "/filler", O_WRONLY | O_CREAT, 0o600)
        let chunk = [UInt8](repeating: 7, count: 4096)
        while write(fd, chunk, chunk.count) > 0 {}
        close(fd)
        return { _ = try? run(["/bin/umount", "-l", path]) }
    }

    /// A photo that is not an image fails while the disk is nearly full: its stage said
    /// it can never succeed, so it fails (and goes to quarantine) rather than waiting for
    /// space that would not help it.
    @Test func aFailForBadInputOnANearlyFullDiskIsAFailure() throws {
        let home = NSTemporaryDirectory() + "diskspace-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let unmount = try Self.fullDisk(home)
        defer { unmount(); try? FileManager.default.removeItem(atPath: home) }
        try #require(DiskSpace.isFull(home))
        let bad = StageOutcome.fail(reason: "photo is not a JPEG, PNG, WebP or HEIC file")
        #expect(DiskSpace.classify(bad, home: home) == bad)
        // A retry there (a write that failed without an errno) still waits for space.
        #expect(DiskSpace.classify(.retry(reason: "cannot encode"), home: home) == .noSpace("cannot encode"))
    }

    /// A write's errno decides, not the words of its reason.
    @Test func aNoSpaceCodeIsTheOutageWhateverItsText() throws {
        let outcome = StageOutcome(catching: StoreFailure(.transient, "the store refused the write", code: .noSpace))
        #expect(DiskSpace.classify(outcome, home: NSTemporaryDirectory()) == .unavailable(dependency: "disk",
                reason: "no space left to write (the store refused the write)"))
    }
}
