import Glibc
import Journal
import PhotomemoCore
import StageKit

/// Whole lines read from the committed position into jobs (`QueueLineFramer` cuts them,
/// `QueueLineParser` reads each), committed with their position a batch at a time.
extension QueueReader {
    /// Reads complete lines from `pos` into jobs, at most `maxLines` of them.
    func drain(_ fd: Int32, _ pos: inout QueuePosition, _ report: inout Report, maxLines: Int) throws {
        // Not zeroed: pread fills what is used (4 MiB zeroed at every read of every file
        // was most of the daemon's CPU when a user appended a line every 50 ms).
        var buf = [UInt8](unsafeUninitializedCapacity: Self.chunkBytes) { _, count in count = Self.chunkBytes }
        var linesRead = 0
        while true {
            let chunkAt = pos.offset
            // The line here was found over-long already, its newline searched for: only the
            // search goes on. Its first 4 MiB read and framed again at every read (any append
            // to any queue file) kept the daemon at 70% CPU (attack review, 2026-12-04).
            let known = try stillOverlong(fd, at: pos)
            let n = known ? 0 : try buf.withUnsafeMutableBytes { raw in
                try syscall("pread \(path)", blocking: { pread(fd, raw.baseAddress, raw.count, off_t(chunkAt)) })
            }
            if n == 0 && !known { return }
            // Made unsafe (a chmod) since the turn began: these bytes may be anyone's.
            let now = try QueueFileFollower.status(fd, path: path)
            if let refused = QueueFileFollower.refusal(now, path: path) {
                report.refused = refused
                unsafeInode = UInt64(now.st_ino)
                return
            }
            var memos: [QueuedMemo] = []
            var next = pos
            var framer = QueueLineFramer(buf[0..<n])
            while let line = framer.next() {
                var at = next
                at.line += 1
                guard try handle(line, at: at, into: &memos, &report) else {
                    // A bad line at its owner's cap: the read stops before it.
                    if next.offset != pos.offset { try commit(&memos, at: next, fd, &pos, &report) }
                    return
                }
                next = at
                next.offset += Int64(line.length)
                linesRead += 1
                if next.line - pos.line >= Self.linesPerCommit || linesRead >= maxLines {
                    try commit(&memos, at: next, fd, &pos, &report)
                    if linesRead >= maxLines { report.more = true; return }
                }
            }
            if known || framer.startsOverlongLine(cap: MemoJob.maxLineBytes) {
                // One line longer than the limit: find its end, quarantine all of it, skip it.
                guard let end = try findNewline(fd, lineAt: pos, from: pos.offset + Int64(n), &report) else { return }
                if atBadLineCap(&report) {
                    if next.offset != pos.offset { try commit(&memos, at: next, fd, &pos, &report) }
                    return
                }
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
            if n < buf.count && !known { return }
        }
    }

    /// Whether the line at `pos` is still the one found over-long (`searched`), as far as
    /// the file's size and its first 64 KiB tell: a file cut back under the search (its
    /// owner removing the line), or bytes there rewritten with a newline, are read again
    /// (a known line's newline searched on from before found lines appended since as part
    /// of it: attack review, 2026-12-04).
    func stillOverlong(_ fd: Int32, at pos: QueuePosition) throws -> Bool {
        guard let s = searched, s.inode == pos.inode, s.generation == pos.generation, s.line == pos.offset else { return false }
        let st = try QueueFileFollower.status(fd, path: path)
        var head = [UInt8](repeating: 0, count: 64 << 10)
        let n = try head.withUnsafeMutableBytes { raw in
            try syscall("pread \(path)", blocking: { pread(fd, raw.baseAddress, raw.count, off_t(pos.offset)) })
        }
        guard Int64(st.st_size) >= s.to, n == head.count, !head.contains(0x0A) else {
            searched = nil
            return false
        }
        return true
    }

    /// Commits the jobs of the lines up to `next` with that position, in one transaction.
    func commit(_ memos: inout [QueuedMemo], at next: QueuePosition, _ fd: Int32, _ pos: inout QueuePosition,
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

    /// Takes one line: a job, nothing (blank), or quarantine. False when the line is bad and
    /// its owner is at the cap of quarantined lines (`QuarantinedLines`): it is not taken.
    func handle(_ line: QueueLineFramer.Line, at pos: QueuePosition, into memos: inout [QueuedMemo], _ report: inout Report) throws -> Bool {
        if line.isBlank { return true }
        if let u = untrusted, u.inode == pos.inode, u.generation == pos.generation, pos.offset < u.until {
            guard !atBadLineCap(&report) else { return false }
            try quarantineLine(line.bytes, at: pos, reason: "appended while \(name) was writable by others than its owner, so it could be "
                               + "anyone's; not read as theirs: append it again if it is yours", &report)
            return true
        }
        switch parser.parse(line.bytes, at: pos, owner: owner, allowance: &allowance) {
        case .success(let memo): memos.append(memo)
        case .failure(let refused):
            guard !atBadLineCap(&report) else { return false }
            // If even quarantine fails, this throws: the position is not committed past the line.
            try quarantineLine(line.bytes, at: pos, reason: refused.reason, &report)
        }
        return true
    }
}
