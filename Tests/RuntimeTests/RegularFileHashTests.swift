import Foundation
import Glibc
import PhotomemoCore
import Testing
@testable import Runtime

/// Intake hashes only the regular file it checked (`Files.hexOfRegularFile`): a FIFO or a
/// link swapped in after the check is no hash, at once, never read (a FIFO once froze
/// intake; a link to /dev/zero kept it reading forever), nor is another file renamed over it.
@Suite struct RegularFileHashTests {
    let dir = NSTemporaryDirectory() + "pm-hash-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"

    @Test func aFIFOALinkOrAReplacedFileIsRefusedWithoutBlocking() throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let folder = try OpenFolder(dir)
        try Data("photo".utf8).write(to: URL(fileURLWithPath: dir + "/p.jpg"))
        #expect(link(dir + "/p.jpg", dir + "/kept") == 0)  // its inode is never free for a later file to take
        var st = stat()
        lstat(dir + "/p.jpg", &st)
        let me = (UInt64(st.st_dev), UInt64(st.st_ino), Int64(st.st_size))
        #expect(try Files.hexOfRegularFile("p.jpg", in: folder, expected: me) == SHA256.hex(Data("photo".utf8)))

        let started = Date()
        #expect(mkfifo(dir + "/fifo.jpg", 0o600) == 0)
        #expect(rename(dir + "/fifo.jpg", dir + "/p.jpg") == 0)
        #expect(try Files.hexOfRegularFile("p.jpg", in: folder, expected: me) == nil)
        #expect(unlink(dir + "/p.jpg") == 0 && symlink("/dev/zero", dir + "/p.jpg") == 0)
        #expect(try Files.hexOfRegularFile("p.jpg", in: folder, expected: me) == nil)
        #expect(Date().timeIntervalSince(started) < 2)
        // Another file renamed over the one that was checked.
        #expect(unlink(dir + "/p.jpg") == 0)
        try Data("other".utf8).write(to: URL(fileURLWithPath: dir + "/p.jpg"))
        #expect(try Files.hexOfRegularFile("p.jpg", in: folder, expected: me) == nil)
    }
}
