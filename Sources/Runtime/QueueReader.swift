import EventLoop
import Foundation
import Glibc
import Journal
import PhotomemoCore

/// Reads `queue.jsonl` from the committed position to its end, turning complete lines
/// into jobs. Runs on the intake lane (one call at a time, off the loop).
///
/// - The position (inode, offset, line) is committed in the same transaction as the jobs
///   of the lines before it, never earlier: a crash re-reads, it never skips.
/// - A partial last line waits for its newline.
/// - Replacement (new inode) drains the old file through the fd held open, then starts
///   the new one at 0; truncation (size below the offset) starts over at 0.
/// - A bad line is written to quarantine with its line number, offset and reason, and
///   reading goes on.
final class QueueReader: @unchecked Sendable {
    // Safe: used only from the serial intake lane.
    let path: String
    let journal: Journal
    let quarantine: Quarantine
    let photos: PhotoPolicy
    /// Set from the loop thread on reload, read on the lane.
    let joinTimeoutSeconds: LockedValue<Int>
    private var held: (fd: Int32, inode: UInt64)?
    /// The uid owning the queue file being read.
    private var queueOwner: UInt32 = 0

    static let chunkBytes = 4 << 20

    struct Report: Sendable {
        var lines = 0
        var outcomes: [IntakeOutcome] = []
        var quarantined: [String] = []
        var unreadBytes: Int64 = 0
        var notes: [String] = []
    }

    init(path: String, journal: Journal, quarantine: Quarantine, photos: PhotoPolicy, joinTimeoutSeconds: Int) {
        self.path = path
        self.journal = journal
        self.quarantine = quarantine
        self.photos = photos
        self.joinTimeoutSeconds = LockedValue(joinTimeoutSeconds)
    }

    deinit { if let held { close(held.fd) } }

    func catchUp() throws -> Report {
        var report = Report()
        var pos = try journal.queuePosition()
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        var pathInode: UInt64?
        if fd >= 0 {
            var st = stat()
            fstat(fd, &st)
            pathInode = UInt64(st.st_ino)
        }
        if let h = held, h.inode != pathInode {
            // Replaced (or removed): finish the old file first, through the fd we hold.
            if pos.inode == h.inode { try drain(h.fd, inode: h.inode, &pos, &report) }
            close(h.fd)
            held = nil
            report.notes.append("queue file replaced")
        }
        if let ino = pathInode {
            if held == nil { held = (fd, ino) } else { close(fd) }
            if pos.inode != ino { pos = QueuePosition(inode: ino, offset: 0, line: 0) }
            var st = stat()
            fstat(held!.fd, &st)
            queueOwner = st.st_uid
            if Int64(st.st_size) < pos.offset {
                report.notes.append("queue file truncated to \(st.st_size) bytes (was read to \(pos.offset)): reading from the start")
                pos = QueuePosition(inode: ino, offset: 0, line: 0)
            }
            try drain(held!.fd, inode: ino, &pos, &report)
            fstat(held!.fd, &st)
            report.unreadBytes = max(0, Int64(st.st_size) - pos.offset)
        }
        return report
    }

    private func drain(_ fd: Int32, inode: UInt64, _ pos: inout QueuePosition, _ report: inout Report) throws {
        var buf = [UInt8](repeating: 0, count: Self.chunkBytes)
        while true {
            let n = try buf.withUnsafeMutableBytes { raw in
                try syscall("pread \(path)", blocking: { pread(fd, raw.baseAddress, raw.count, off_t(pos.offset)) })
            }
            if n == 0 { return }
            var memos: [QueuedMemo] = []
            var next = pos
            var start = 0
            while let nl = buf[start..<n].firstIndex(of: 0x0A) {
                next.line += 1
                try handle(buf[start..<nl], at: next.offset, line: next.line, inode: inode, into: &memos, &report)
                next.offset += Int64(nl + 1 - start)
                start = nl + 1
            }
            if start == 0 && n - start > MemoJob.maxLineBytes {
                // One line longer than the limit: find its end, quarantine its head, skip it.
                guard let end = try findNewline(fd, from: pos.offset + Int64(n)) else { return }
                next.line += 1
                let length = end + 1 - pos.offset
                try quarantineLine(buf[0..<min(n, 64 * 1024)], at: pos.offset, line: next.line, inode: inode,
                               reason: "line is \(length - 1) bytes, longer than the 1 MiB limit", &report)
                next.offset = end + 1
            }
            if next == pos { return }
            Failpoint.hit("queue.before_commit")
            report.outcomes += try journal.commitMemos(memos, position: next, joinTimeoutSeconds: joinTimeoutSeconds.value)
            report.lines += Int(next.line - pos.line)
            pos = next
            if n < buf.count { return }
        }
    }

    private func findNewline(_ fd: Int32, from offset: Int64) throws -> Int64? {
        var buf = [UInt8](repeating: 0, count: 1 << 20)
        var at = offset
        while true {
            let n = try buf.withUnsafeMutableBytes { raw in
                try syscall("pread \(path)", blocking: { pread(fd, raw.baseAddress, raw.count, off_t(at)) })
            }
            if n == 0 { return nil }
            if let i = buf[0..<n].firstIndex(of: 0x0A) { return at + Int64(i) }
            at += Int64(n)
        }
    }

    private func handle(_ raw: ArraySlice<UInt8>, at offset: Int64, line: Int64, inode: UInt64,
                        into memos: inout [QueuedMemo], _ report: inout Report) throws {
        var bytes = raw
        if bytes.last == 0x0D { bytes = bytes.dropLast() }
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }
        var memo: MemoJob
        let photo: QueuedMemo.Photo
        do {
            memo = try MemoJob.parse(line: Array(bytes))
            photo = try resolvePhoto(memo.photo)
        } catch {
            let reason = (error as? PhotomemoError)?.message ?? "\(error)"
            // If even quarantine fails, this throws: the position is not committed past the line.
            try quarantineLine(bytes, at: offset, line: line, inode: inode, reason: reason, &report)
            return
        }
        let source = "queue.jsonl line \(line) (byte \(offset))"
        // A line may name its owner only when the queue file belongs to root or that user.
        let fileOwner = UnixUser.nameOrNumber(queueOwner)
        if memo.owner == nil || (queueOwner != 0 && memo.owner != fileOwner) { memo.owner = fileOwner }
        memos.append(QueuedMemo(memo: memo, photo: photo, key: memo.key ?? "queue:\(inode):\(offset)", source: source))
    }

    func resolvePhoto(_ photo: String?) throws -> QueuedMemo.Photo {
        guard let photo else { return .none }
        switch try photos.resolve(photo) {
        case .inbox(let name):
            guard !PhotoPolicy.isIgnoredInboxName(name) else {
                throw PhotomemoError(.badPath, "photo \"\(name)\" is a name the inbox ignores (starts with '.' or ends in .part/.tmp)")
            }
            return .inbox(name: name)
        case .absolute(let path):
            guard let real = realpath(path, nil) else { return .unusable(path: path, reason: "photo \(path) not found") }
            let resolved = String(cString: real)
            free(real)
            guard case .absolute = try photos.resolve(resolved) else {
                throw PhotomemoError(.badPath, "photo \(path) resolves to \(resolved), outside every --allow-root")
            }
            let st = try Files.lstatEntry(resolved)
            guard st.st_mode & S_IFMT == S_IFREG else {
                return .unusable(path: path, reason: "photo \(path) is a \(Files.kind(st)), not a regular file")
            }
            return .file(path: resolved, sha256: try SHA256.hexOfFile(atPath: resolved).hex)
        }
    }

    private func quarantineLine(_ bytes: ArraySlice<UInt8>, at offset: Int64, line: Int64, inode: UInt64,
                                reason: String, _ report: inout Report) throws {
        let name = "queue-line-\(inode)-\(offset).jsonl"
        let why = Quarantine.reason(reason, extra: ["source": "queue.jsonl", "line": .int(line), "offset": .int(offset)])
        report.quarantined.append(try quarantine.writeLine(bytes, name: name, reason: why) + ": line \(line): " + reason)
    }
}
