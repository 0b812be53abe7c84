import CPosix
import EventLoop
import Foundation
import Glibc
import Journal
import PhotomemoCore

/// Reads one queue file (`queue.jsonl`, or a user's `queue.d/NAME.jsonl`) from its
/// committed position to its end, turning complete lines into jobs. Runs on the intake
/// lane (one call at a time, off the loop).
///
/// - The position (inode, generation, offset, line) is committed in the same transaction
///   as the jobs of the lines before it, never earlier: a crash re-reads, it never skips.
/// - A partial last line waits for its newline.
/// - Replacement (new inode) drains the old file through the fd held open, then starts
///   the new one at 0 (a replacement replaced in turn before its turn is held open too); truncation (size below the offset) or a rewrite (the bytes before
///   the offset changed) starts over at 0. Each start-over is a new generation, and the
///   generation is part of every derived job key, so a new line never repeats an old key.
/// - Lines belong to the file's owner (fstat). An `"owner"` in a line counts only in a
///   file owned by an admin. Like sshd's StrictModes, a file that anyone but its owner may
///   write (group/other write bits, a second hard link) or that is a symlink is not read.
///   The held descriptor is fstat'd before every read turn and after every chunk read, so
///   a chmod on the open file stops reading too. Bytes appended while it was unsafe could
///   be anyone's: once it is safe again, the lines that start in them are quarantined, not
///   read as its owner's (so no `"owner"` in them is honoured); reading goes on after them.
/// - A bad line is written to quarantine, whole, with its line number, offset and reason,
///   and reading goes on.
final class QueueReader: @unchecked Sendable {
    // Safe: used only from the serial intake lane.
    /// The file relative to the home: its key in the journal and in derived job keys.
    let name: String
    let path: String
    let journal: any JobIntake
    let quarantine: Quarantine
    let intake: MemoIntake
    private var held: (fd: Int32, inode: UInt64)?
    /// Files that replaced `held` while its rest was still to read, oldest first, each held
    /// open from the first read that saw it: a file renamed over one that is renamed over
    /// in turn before the old rest is read loses no line.
    private var pending: [(fd: Int32, inode: UInt64)] = []
    /// The uid owning the queue file being read.
    private var queueOwner: UInt32 = 0
    private var queueOwnerName = ""

    static let chunkBytes = 4 << 20
    /// How many bytes before the offset are fingerprinted.
    static let tailBytes = 256
    /// One read is one turn of the intake lane, which the inbox and every queue file share:
    /// it commits at most `linesPerRead` lines, `linesPerCommit` a transaction, and searches
    /// at most `searchBytesPerRead` for the end of an over-long line; the rest waits for the
    /// next read, at once after what else is waiting (`Report.more`). A 4 MiB file of `{}`
    /// lines (1.4 million jobs) was one transaction that held 650 MB and the loop for
    /// minutes, and a sparse 200 GB file with no newline was read whole on every poll.
    static let linesPerCommit = 512
    static let linesPerRead = 8192
    static let searchBytesPerRead: Int64 = 16 << 20
    /// How far the line at the committed position has been searched for its newline (its
    /// file, generation and offset, and the offset searched to): each read searches only
    /// what was appended since.
    private var searched: (inode: UInt64, generation: Int64, line: Int64, to: Int64)?
    /// Its owner reached `MemoIntake.maxUnfinishedPerUser` since the file was last read to
    /// its end (said once in the log, not at every read).
    private var holding = false
    /// The owner's quota as this read turn found it (`QuotaMeter`): lines past it are quarantined.
    private var allowance: QuotaMeter.Allowance?
    /// The inode of the held file while it is refused (StrictModes): when it is safe again,
    /// what was appended meanwhile is not trusted.
    private var unsafeInode: UInt64?
    /// Lines of that file (inode, generation) starting before `until` were appended while
    /// others could write it: quarantined, not read.
    private var untrusted: (inode: UInt64, generation: Int64, until: Int64)?

    struct Report: Sendable {
        var lines = 0
        var outcomes: [(outcome: IntakeOutcome, owner: String?)] = []
        var quarantined: [String] = []
        var unreadBytes: Int64 = 0
        var notes: [String] = []
        /// Why the file is not read (StrictModes), if it is not.
        var refused: String?
        /// The file's owner, when the file exists.
        var owner: UInt32?
        /// The read stopped at its budget with more to read: read again soon.
        var more = false
    }

    init(path: String, name: String, journal: any JobIntake, quarantine: Quarantine, intake: MemoIntake) {
        self.path = path
        self.name = name
        self.journal = journal
        self.quarantine = quarantine
        self.intake = intake
    }

    deinit { for f in (held.map { [$0] } ?? []) + pending { close(f.fd) } }

    /// Why a queue file may not be read, or nil.
    static func refusal(_ st: stat, path: String) -> String? {
        if st.st_mode & S_IFMT != S_IFREG { return "\(path) is a \(Files.kind(st)), not a queue file" }
        if st.st_mode & 0o022 != 0 {
            return "\(path) is writable by users other than its owner (mode \(String(st.st_mode & 0o7777, radix: 8))), so its lines "
                + "could be anyone's; it is not read until: chmod go-w \(path)"
        }
        if st.st_nlink > 1 { return "\(path) has \(st.st_nlink) hard links; a queue file is read only with one" }
        return nil
    }

    func catchUp() throws -> Report {
        var report = Report()
        var pos = try journal.queuePosition(file: name)
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if fd < 0 && errno == ELOOP {
            report.refused = "\(path) is a symlink; a queue file is read only as a file of its own"
            report.owner = (try? Files.lstatEntry(path))?.st_uid
        }
        var pathInode: UInt64?
        if fd >= 0 {
            var st = stat()
            fstat(fd, &st)
            pathInode = UInt64(st.st_ino)
        }
        // `fd` is kept open (among `pending`) when it replaced the file being read.
        var adopted = false
        if let h = held, let ino = pathInode, h.inode != ino, !pending.contains(where: { $0.inode == ino }) {
            pending.append((fd, ino))
            adopted = true
        }
        while let h = held, h.inode != pathInode {
            // Replaced (or removed): finish the old file first, through the fd we hold, then
            // each file that replaced it, in turn; under the owner's cap like any read.
            if pos.inode != h.inode { pos = pos.restarted(inode: h.inode) }  // a replacement not read yet
            var old = stat()
            fstat(h.fd, &old)
            if let refused = Self.refusal(old, path: path) {
                // Made writable by others before it was replaced: its rest could be anyone's.
                report.notes.append("\(name) replaced; the rest of the old file is not read: \(refused)")
            } else {
                queueOwner = old.st_uid
                queueOwnerName = UnixUser.nameOrNumber(old.st_uid)
                report.owner = old.st_uid
                // Once open to all, a writer may still hold it: replacing the file is how its
                // owner shuts them out, so nothing of the old file's rest is trusted.
                if untrusted?.inode == h.inode || unsafeInode == h.inode { untrusted = (h.inode, pos.generation, .max) }
                let room = try roomOrHold(&report)
                if room > 0 { try drain(h.fd, &pos, &report, maxLines: min(Self.linesPerRead, room)) }
                if room <= 0 || report.more {
                    // Held at the cap, or its budget ran out: the old file's rest comes first.
                    if fd >= 0 && !adopted { close(fd) }
                    return report
                }
            }
            close(h.fd)
            held = pending.isEmpty ? nil : pending.removeFirst()
            report.notes.append("\(name) replaced")
        }
        guard let ino = pathInode else { return report }
        if held == nil { held = (fd, ino) } else if !adopted { close(fd) }
        var st = stat()
        fstat(held!.fd, &st)
        queueOwner = st.st_uid
        queueOwnerName = UnixUser.nameOrNumber(st.st_uid)  // once per read, not once per line
        report.owner = st.st_uid
        if let refused = Self.refusal(st, path: path) {
            report.refused = refused
            unsafeInode = ino
            report.unreadBytes = max(0, Int64(st.st_size) - (pos.inode == ino ? pos.offset : 0))
            return report
        }
        if pos.inode != ino {
            pos = pos == .start ? QueuePosition(inode: ino, offset: 0, line: 0) : pos.restarted(inode: ino)
        } else if Int64(st.st_size) < pos.offset {
            report.notes.append("\(name) truncated to \(st.st_size) bytes (was read to \(pos.offset)): reading from the start")
            pos = try startOver(ino, from: pos)
        } else if let tail = pos.tail, try fingerprint(held!.fd, before: pos.offset) != tail {
            report.notes.append("\(name) was rewritten before byte \(pos.offset): reading from the start")
            pos = try startOver(ino, from: pos)
        }
        if unsafeInode == ino {
            // Safe again: what others could have appended meanwhile is not its owner's.
            unsafeInode = nil
            untrusted = (ino, pos.generation, Int64(st.st_size))
            if Int64(st.st_size) > pos.offset {
                report.notes.append("\(name) is safe again (mode \(String(st.st_mode & 0o7777, radix: 8))); the \(Int64(st.st_size) - pos.offset) bytes "
                                    + "appended while others could write it are not trusted: their lines go to quarantine")
            }
        }
        let room = try roomOrHold(&report)
        if room > 0 {
            try drain(held!.fd, &pos, &report, maxLines: min(Self.linesPerRead, room))
            if !report.more { holding = false }  // read to its end: a later hold is news again
        }
        fstat(held!.fd, &st)
        report.unreadBytes = max(0, Int64(st.st_size) - pos.offset)
        return report
    }

    /// A new generation from byte 0, committed at once: a file truncated to nothing has no
    /// line to commit it with, and was found truncated (and said so) at every poll.
    private func startOver(_ ino: UInt64, from pos: QueuePosition) throws -> QueuePosition {
        let next = pos.restarted(inode: ino)
        _ = try journal.commitMemos([], position: next, file: name, joinTimeoutSeconds: intake.joinTimeoutSeconds.value,
                                   memoStage: intake.memoStage.value, now: unixNow())
        return next
    }

    /// How many more jobs the file's owner may have. A user's lines wait unread while they
    /// have as many unfinished jobs as they may (said once until the file is read to its end).
    private func roomOrHold(_ report: inout Report) throws -> Int {
        let room = try MemoIntake.room(for: queueOwnerName, uid: queueOwner, in: journal)
        allowance = try intake.quota?.allowance(owner: queueOwnerName, uid: queueOwner)
        if room <= 0 {
            if !holding {
                report.notes.append("\(name): \(queueOwnerName) has \(MemoIntake.maxUnfinishedPerUser) unfinished jobs, the most a user may have; the rest of the file is read as they finish")
            }
            holding = true
        }
        return room
    }

    /// "LENGTH:SHA256" of the (up to) `tailBytes` bytes before `offset`.
    private func fingerprint(_ fd: Int32, before offset: Int64) throws -> String {
        let length = Int(min(offset, Int64(Self.tailBytes)))
        var buf = [UInt8](repeating: 0, count: length)
        let n = try buf.withUnsafeMutableBytes { raw in
            try syscall("pread \(path)", blocking: { pread(fd, raw.baseAddress, length, off_t(offset - Int64(length))) })
        }
        return "\(n):" + SHA256.hex(Data(buf[0..<n]))
    }

    /// Reads complete lines from `pos` into jobs, at most `maxLines` of them.
    private func drain(_ fd: Int32, _ pos: inout QueuePosition, _ report: inout Report, maxLines: Int) throws {
        var buf = [UInt8](repeating: 0, count: Self.chunkBytes)
        var linesRead = 0
        while true {
            let chunkAt = pos.offset
            let n = try buf.withUnsafeMutableBytes { raw in
                try syscall("pread \(path)", blocking: { pread(fd, raw.baseAddress, raw.count, off_t(chunkAt)) })
            }
            if n == 0 { return }
            // Made unsafe (a chmod) since the turn began: these bytes may be anyone's.
            var now = stat()
            fstat(fd, &now)
            if let refused = Self.refusal(now, path: path) {
                report.refused = refused
                unsafeInode = UInt64(now.st_ino)
                return
            }
            var memos: [QueuedMemo] = []
            var next = pos
            var start = 0
            while let nl = buf[start..<n].firstIndex(of: 0x0A) {
                next.line += 1
                try handle(buf[start..<nl], at: next, into: &memos, &report)
                next.offset += Int64(nl + 1 - start)
                start = nl + 1
                linesRead += 1
                if next.line - pos.line >= Self.linesPerCommit || linesRead >= maxLines {
                    try commit(&memos, at: next, fd, &pos, &report)
                    if linesRead >= maxLines { report.more = true; return }
                }
            }
            if start == 0 && n - start > MemoJob.maxLineBytes {
                // One line longer than the limit: find its end, quarantine all of it, skip it.
                guard let end = try findNewline(fd, lineAt: pos, from: pos.offset + Int64(n), &report) else { return }
                next.line += 1
                let length = end - pos.offset
                let kept = length > Quarantine.maxKeptLineBytes ? " (its first \(Quarantine.maxKeptLineBytes >> 20) MiB are kept)" : ""
                try quarantineLongLine(fd, at: next, length: length,
                                       reason: "line is \(length) bytes, longer than the 1 MiB limit\(kept)", &report)
                next.offset = end + 1
                linesRead += 1
            }
            if next.offset != pos.offset { try commit(&memos, at: next, fd, &pos, &report) }
            if pos.offset == chunkAt { return }  // no whole line in this chunk yet
            if linesRead >= maxLines { report.more = true; return }
            if n < buf.count { return }
        }
    }

    /// Commits the jobs of the lines up to `next` with that position, in one transaction.
    private func commit(_ memos: inout [QueuedMemo], at next: QueuePosition, _ fd: Int32, _ pos: inout QueuePosition,
                        _ report: inout Report) throws {
        var next = next
        next.tail = try fingerprint(fd, before: next.offset)
        Failpoint.hit("queue.before_commit")
        let outcomes = try journal.commitMemos(memos, position: next, file: name, joinTimeoutSeconds: intake.joinTimeoutSeconds.value,
                                               memoStage: intake.memoStage.value, now: unixNow())
        report.outcomes += zip(outcomes, memos).map { ($0, $1.memo.owner) }
        report.lines += Int(next.line - pos.line)
        pos = next
        memos.removeAll(keepingCapacity: true)
    }

    /// The offset of the newline ending the line at `line`, searched from `from` (or from
    /// where an earlier read stopped) for at most `searchBytesPerRead` bytes, or nil if not
    /// found yet (`report.more` when the budget ran out first). Holes, a sparse file's
    /// unwritten ranges, read as zeros and hold no newline: they are skipped, not read.
    private func findNewline(_ fd: Int32, lineAt line: QueuePosition, from offset: Int64, _ report: inout Report) throws -> Int64? {
        var st = stat()
        fstat(fd, &st)
        var at = offset
        if let s = searched, s.inode == line.inode, s.generation == line.generation, s.line == line.offset, s.to <= Int64(st.st_size) {
            at = max(at, s.to)
        }
        defer { searched = (line.inode, line.generation, line.offset, at) }
        var budget = Self.searchBytesPerRead
        var buf = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let data = pm_seek_data(fd, off_t(at))
            if data < 0 && errno == ENXIO { return nil }  // only a hole (or nothing) up to the end
            if data > at { at = Int64(data) }
            if budget <= 0 {
                report.more = true
                return nil
            }
            let want = Int(min(Int64(buf.count), budget))
            let n = try buf.withUnsafeMutableBytes { raw in
                try syscall("pread \(path)", blocking: { pread(fd, raw.baseAddress, want, off_t(at)) })
            }
            if n == 0 { return nil }
            if let i = buf[0..<n].firstIndex(of: 0x0A) { return at + Int64(i) }
            at += Int64(n)
            budget -= Int64(n)
        }
    }

    private func handle(_ raw: ArraySlice<UInt8>, at pos: QueuePosition, into memos: inout [QueuedMemo], _ report: inout Report) throws {
        var bytes = raw
        if bytes.last == 0x0D { bytes = bytes.dropLast() }
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }
        if let u = untrusted, u.inode == pos.inode, u.generation == pos.generation, pos.offset < u.until {
            try quarantineLine(bytes, at: pos, reason: "appended while \(name) was writable by others than its owner, so it could be "
                               + "anyone's; not read as theirs: append it again if it is yours", &report)
            return
        }
        var memo: MemoJob
        let photo: QueuedMemo.Photo
        do {
            memo = try MemoJob.parse(line: Array(bytes))
            // The lines are the file owner's; only an admin's file may name another owner.
            if memo.owner == nil || !UnixUser.isAdmin(uid: queueOwner) { memo.owner = queueOwnerName }
            photo = try intake.resolvePhoto(memo.photo, owner: memo.owner)
            if allowance != nil, let refused = allowance!.take() { throw refused }
        } catch {
            let reason = (error as? PhotomemoError)?.message ?? "\(error)"
            // If even quarantine fails, this throws: the position is not committed past the line.
            try quarantineLine(bytes, at: pos, reason: reason, &report)
            return
        }
        let source = "\(name) line \(pos.line) (byte \(pos.offset))"
        let key = memo.key.map { JobKey.scoped($0, owner: memo.owner) } ?? "queue:\(journal.host.isEmpty ? "" : journal.host + "/")\(name):g\(pos.generation):\(pos.offset)"
        memos.append(QueuedMemo(memo: memo, photo: photo, key: key, source: source))
    }

    private func quarantineName(_ pos: QueuePosition) -> String {
        "queue-line-\(name.replacingOccurrences(of: "/", with: "_"))-g\(pos.generation)-\(pos.offset).jsonl"
    }

    private func quarantineReason(_ reason: String, _ pos: QueuePosition) -> JSONValue {
        Quarantine.reason(reason, extra: ["source": .string(name), "line": .int(pos.line), "offset": .int(pos.offset)])
    }

    private func quarantineLine(_ bytes: ArraySlice<UInt8>, at pos: QueuePosition, reason: String, _ report: inout Report) throws {
        let saved = try quarantine.writeLine(bytes, name: quarantineName(pos), reason: quarantineReason(reason, pos))
        report.quarantined.append(saved + ": line \(pos.line): " + reason)
    }

    private func quarantineLongLine(_ fd: Int32, at pos: QueuePosition, length: Int64, reason: String, _ report: inout Report) throws {
        let saved = try quarantine.copyLine(from: fd, offset: pos.offset, length: length, name: quarantineName(pos),
                                            reason: quarantineReason(reason, pos))
        report.quarantined.append(saved + ": line \(pos.line): " + reason)
    }
}
