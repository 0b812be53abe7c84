import Foundation
import Glibc
import PhotomemoCore
import Testing
@testable import Runtime

/// The queue files of a folder (`queue.d/`), each read by its own reader.
@Suite struct QueueFolderTests {
    /// A queue file whose name is not UTF-8 was left out of the folder's listing: its lines
    /// were never read and nothing said why. It is refused with why, shown as its owner's.
    @Test func aQueueFileWhoseNameIsNotUTF8IsRefusedWithWhy() throws {
        let t = try TestHome()
        try FileManager.default.createDirectory(atPath: t.home.queueFolder, withIntermediateDirectories: true)
        try t.append(#"{"memo":"ok"}"# + "\n", to: t.home.queueFolder + "/ok.jsonl")
        let bad: [CChar] = Array((t.home.queueFolder + "/bad").utf8CString.dropLast()) + [CChar(bitPattern: 0xFF)] + Array(".jsonl".utf8CString)
        let fd = open(bad, O_CREAT | O_WRONLY, 0o644)
        #expect(fd >= 0 && write(fd, "{\"memo\":\"lost\"}\n", 16) == 16)
        close(fd)
        // A file named in UTF-8 as the other is shown (a backslash, x, F, F): both are listed.
        try t.append(#"{"memo":"look-alike"}"# + "\n", to: t.home.queueFolder + "/bad\\xFF.jsonl")
        let folder = QueueFolder(path: t.home.queueFolder, prefix: "queue.d/", isQueueFile: { $0.hasSuffix(".jsonl") }) { path, name in
            QueueReader(path: path, name: name, journal: t.journal, quarantine: t.quarantine, intake: MemoIntake(photos: t.photos, joinTimeoutSeconds: 60))
        }
        let results = folder.catchUp()
        let refused = try #require(results["queue.d/bad\\xFF.jsonl (not UTF-8)"], "\(results.keys)").get()
        #expect(refused.refused?.contains("bad\\xFF.jsonl: the file name is not valid UTF-8") == true && refused.owner == getuid(), "\(refused)")
        #expect(try results["queue.d/bad\\xFF.jsonl"]?.get().refused == nil)
        #expect(try t.jobs().map(\.memo.memo).sorted() == ["look-alike", "ok"])
    }

    /// Two names that are not UTF-8 were shown alike (`x` + `\xFE` in those characters +
    /// byte 0xFF, and `x` + byte 0xFE + `\xFF`): one user's refusal hid the other's. A
    /// backslash is escaped too, so each name shows its own way.
    @Test func twoNamesThatAreNotUTF8NeverShowAlike() throws {
        let t = try TestHome()
        try FileManager.default.createDirectory(atPath: t.home.queueFolder, withIntermediateDirectories: true)
        let folder = Array(t.home.queueFolder.utf8) + [0x2F]
        for name in [Array("x\\xFE".utf8) + [0xFF], [0x78, 0xFE] + Array("\\xFF".utf8)] {
            let path = (folder + name + Array(".jsonl".utf8)).map { CChar(bitPattern: $0) } + [0]
            close(open(path, O_CREAT | O_WRONLY, 0o644))
        }
        #expect(Files.shown([0x01, 0x41]) == "\\x01A")  // two digits: never `\x1A`
        let results = Self.folder(t).catchUp()
        #expect(Set(results.keys) == ["queue.d/x\\x5CxFE\\xFF.jsonl (not UTF-8)", "queue.d/x\\xFE\\x5CxFF.jsonl (not UTF-8)"], "\(results.keys)")
    }

    /// A folder named like a queue file is refused with why, and has no unread bytes (its
    /// size is the folder's, not lines: status showed `unread_bytes: 4096`).
    @Test func aFolderNamedLikeAQueueFileIsRefusedWithNothingUnread() throws {
        let t = try TestHome()
        try FileManager.default.createDirectory(atPath: t.home.queueFolder + "/x.jsonl", withIntermediateDirectories: true)
        let folder = QueueFolder(path: t.home.queueFolder, prefix: "queue.d/", isQueueFile: { $0.hasSuffix(".jsonl") }) { path, name in
            QueueReader(path: path, name: name, journal: t.journal, quarantine: t.quarantine, intake: MemoIntake(photos: t.photos, joinTimeoutSeconds: 60))
        }
        let report = try #require(folder.catchUp()["queue.d/x.jsonl"]).get()
        #expect(report.refused?.contains("is a directory, not a queue file") == true, "\(report)")
        #expect(report.unreadBytes == 0)
    }

    /// A Unix socket named like a queue file did not open, and was passed over without a
    /// word (a folder or a FIFO is reported): it is refused with why, its owner's, and the
    /// files beside it are read.
    @Test func aSocketNamedLikeAQueueFileIsRefusedWithWhy() throws {
        let t = try TestHome()
        try FileManager.default.createDirectory(atPath: t.home.queueFolder, withIntermediateDirectories: true)
        try t.append(#"{"memo":"ok"}"# + "\n", to: t.home.queueFolder + "/ok.jsonl")
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let path = t.home.queueFolder + "/sock.jsonl"
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        #expect(bound == 0)
        let folder = QueueFolder(path: t.home.queueFolder, prefix: "queue.d/", isQueueFile: { $0.hasSuffix(".jsonl") }) { path, name in
            QueueReader(path: path, name: name, journal: t.journal, quarantine: t.quarantine, intake: MemoIntake(photos: t.photos, joinTimeoutSeconds: 60))
        }
        let results = folder.catchUp()
        let report = try #require(results["queue.d/sock.jsonl"], "\(results.keys)").get()
        #expect(report.refused?.contains("is a socket, not a queue file") == true && report.owner == getuid(), "\(report)")
        #expect(report.unreadBytes == 0)
        #expect(try t.jobs().map(\.memo.memo) == ["ok"])
    }

    /// This process's descriptors open on files in `folder` (other tests run beside, so a
    /// count of all of them was theirs too).
    static func openDescriptors(in folder: String) -> Int {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0))?.hasPrefix(folder + "/") == true }.count
    }

    static func folder(_ t: TestHome) -> QueueFolder {
        QueueFolder(path: t.home.queueFolder, prefix: "queue.d/", isQueueFile: { $0.hasSuffix(".jsonl") }) { path, name in
            QueueReader(path: path, name: name, journal: t.journal, quarantine: t.quarantine, intake: MemoIntake(photos: t.photos, joinTimeoutSeconds: 60))
        }
    }

    /// A user's 20,000 empty `.jsonl` files held a descriptor each until none was left (and
    /// intake stopped for everyone). Past `filesPerOwner` an owner's files are refused in
    /// one entry, hold nothing and cost no read; the first by name are read.
    @Test func anOwnersQueueFilesPastTheCapAreRefusedAndHoldNothing() throws {
        let t = try TestHome()
        try FileManager.default.createDirectory(atPath: t.home.queueFolder, withIntermediateDirectories: true)
        let cap = QueueFolder.filesPerOwner
        for i in 0..<(cap + 40) { try t.append(#"{"memo":"m\#(i)"}"# + "\n", to: t.home.queueFolder + "/" + String(format: "q%03d.jsonl", i)) }
        let folder = Self.folder(t)
        let results = folder.catchUp()
        let open = Self.openDescriptors(in: t.home.queueFolder)
        #expect(open <= cap, "\(open) descriptors open in queue.d")
        #expect(try t.jobs().map(\.memo.memo).sorted() == (0..<cap).map { "m\($0)" }.sorted())
        let summary = try #require(results["queue.d/*.jsonl (\(UnixUser.nameOrNumber(getuid())))"], "\(results.keys.sorted())").get()
        #expect(summary.refused?.contains("more than \(cap) queue files") == true && summary.owner == getuid())
        #expect(results.count == cap + 1)
        // One read removed: the next by name is read, its line too.
        unlink(t.home.queueFolder + "/q000.jsonl")
        _ = folder.catchUp()
        #expect(try t.jobs().count == cap + 1)
    }

    /// A FIFO (or a folder) named like a queue file was held open while refused: a
    /// descriptor each. It is refused and closed.
    @Test func aRefusedFIFOIsNotHeldOpen() throws {
        let t = try TestHome()
        try FileManager.default.createDirectory(atPath: t.home.queueFolder, withIntermediateDirectories: true)
        for i in 0..<10 { #expect(mkfifo(t.home.queueFolder + "/f\(i).jsonl", 0o644) == 0) }
        let folder = Self.folder(t)
        let results = folder.catchUp()
        #expect(Self.openDescriptors(in: t.home.queueFolder) == 0)
        #expect(results.values.allSatisfy { (try? $0.get())?.refused?.contains("is a FIFO, not a queue file") == true }, "\(results)")
    }
}
