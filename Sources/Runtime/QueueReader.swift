import CPosix
import EventLoop
import Foundation
import Glibc
import Journal
import PhotomemoCore
import StageKit

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
    private let follower: QueueFileFollower
    let parser: QueueLineParser
    /// Who owns the queue file being read (fstat), looked up once per read, not per line.
    var owner = QueueLineParser.Owner(uid: 0, name: "")

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
    var searched: (inode: UInt64, generation: Int64, line: Int64, to: Int64)?
    /// Its owner reached `MemoIntake.maxUnfinishedPerUser` since the file was last read to
    /// its end (said once in the log, not at every read).
    private var holding = false
    /// Replacements let go unread and not yet in a note, and when the last note was.
    private var skippedUnsaid = 0, skippedSaidAt = 0.0
    /// Its owner reached `QuarantinedLines.maxPerUser` (said once, as `holding`).
    var heldAtBadLines = false
    /// The owner's quota as this read turn found it (`QuotaMeter`): lines past it are quarantined.
    var allowance: QuotaMeter.Allowance?
    /// The inode of the held file while it is refused (StrictModes): when it is safe again,
    /// what was appended meanwhile is not trusted.
    var unsafeInode: UInt64?
    /// Lines of that file (inode, generation) starting before `until` were appended while
    /// others could write it: quarantined, not read.
    var untrusted: (inode: UInt64, generation: Int64, until: Int64)?

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
        follower = QueueFileFollower(path: path)
        parser = QueueLineParser(name: name, host: journal.host, intake: intake)
    }

    func catchUp() throws -> Report {
        var report = Report()
        var pos = try journal.queuePosition(file: name)
        var pathInode: UInt64?
        switch try follower.lookAtPath() {
        case .file(let f): pathInode = f.inode
        case .symlink:
            report.refused = "\(path) is a symlink; a queue file is read only as a file of its own"
            report.owner = (try? Files.lstatEntry(path))?.st_uid
        case .unopenable(let reason, let owner):
            report.refused = reason
            report.owner = owner
        case .nothing: break
        }
        // Said at most once a minute: 5,000 renames wrote 1,876 such lines.
        skippedUnsaid += follower.takeSkipped()
        if skippedUnsaid > 0, unixNow() - skippedSaidAt >= 60 {
            report.notes.append("\(name) was replaced more than \(QueueFileFollower.maxPending) times while the rest of a file before was unread: "
                + "\(skippedUnsaid) of the files in between are not read")
            (skippedUnsaid, skippedSaidAt) = (0, unixNow())
        }
        guard try finishReplaced(pathInode, &pos, &report), let ino = pathInode, let file = follower.held else { return report }
        try read(file, ino, &pos, &report)
        return report
    }

    /// Reads the rest of each held file the path no longer names (replaced or removed),
    /// oldest first, then lets it go; false when one of them is to be read on later (held
    /// at the owner's cap, or its budget ran out): the old file's rest comes first.
    private func finishReplaced(_ pathInode: UInt64?, _ pos: inout QueuePosition, _ report: inout Report) throws -> Bool {
        while let old = follower.replaced(byInode: pathInode) {
            // Replaced (or removed): finish the old file first, through the fd we hold, then
            // each file that replaced it, in turn; under the owner's cap like any read.
            if pos.inode != old.inode { pos = pos.restarted(inode: old.inode) }  // a replacement not read yet
            let st = try QueueFileFollower.status(old.fd, path: path)
            if let refused = QueueFileFollower.refusal(st, path: path) {
                // Made writable by others before it was replaced: its rest could be anyone's.
                report.notes.append("\(name) replaced; the rest of the old file is not read: \(refused)")
            } else {
                takeOwner(st, &report)
                // Once open to all, a writer may still hold it: replacing the file is how its
                // owner shuts them out, so nothing of the old file's rest is trusted.
                if untrusted?.inode == old.inode || unsafeInode == old.inode { untrusted = (old.inode, pos.generation, .max) }
                let room = try roomOrHold(&report)
                if room > 0 { try drain(old.fd, &pos, &report, maxLines: min(Self.linesPerRead, room)) }
                if room <= 0 || report.more { return false }
            }
            follower.finishHeld()
            report.notes.append("\(name) replaced")
        }
        return true
    }

    /// Reads the file the path names (inode `ino`, held open) from `pos`, unless StrictModes
    /// refuse it; a truncated or rewritten file starts over in a new generation.
    private func read(_ file: QueueFileFollower.OpenFile, _ ino: UInt64, _ pos: inout QueuePosition, _ report: inout Report) throws {
        var st = try QueueFileFollower.status(file.fd, path: path)
        takeOwner(st, &report)
        if let refused = QueueFileFollower.refusal(st, path: path) {
            report.refused = refused
            unsafeInode = ino
            report.unreadBytes = max(0, Int64(st.st_size) - (pos.inode == ino ? pos.offset : 0))
            return
        }
        if pos.inode != ino {
            pos = pos == .start ? QueuePosition(inode: ino, offset: 0, line: 0) : pos.restarted(inode: ino)
        } else if Int64(st.st_size) < pos.offset {
            report.notes.append("\(name) truncated to \(st.st_size) bytes (was read to \(pos.offset)): reading from the start")
            pos = try startOver(ino, from: pos)
        } else if let tail = pos.tail, try fingerprint(file.fd, before: pos.offset) != tail {
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
        // Nothing new (read to its end): no read, and no quota or cap looked up.
        guard Int64(st.st_size) > pos.offset else {
            report.unreadBytes = 0
            holding = false  // read to its end: a later hold is news again
            return
        }
        let room = try roomOrHold(&report)
        if room > 0 {
            try drain(file.fd, &pos, &report, maxLines: min(Self.linesPerRead, room))
            if !report.more { holding = false }  // read to its end: a later hold is news again
        }
        st = try QueueFileFollower.status(file.fd, path: path)
        report.unreadBytes = max(0, Int64(st.st_size) - pos.offset)
    }

    /// The lines read next are `st`'s owner's.
    private func takeOwner(_ st: stat, _ report: inout Report) {
        owner = QueueLineParser.Owner(uid: st.st_uid, name: UnixUser.nameOrNumber(st.st_uid))
        report.owner = st.st_uid
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
        let room = try MemoIntake.room(for: owner.name, uid: owner.uid, in: journal)
        allowance = try intake.quota?.allowance(owner: owner.name, uid: owner.uid)
        if room <= 0 {
            if !holding {
                report.notes.append("\(name): \(owner.name) has \(MemoIntake.maxUnfinishedPerUser) unfinished jobs, the most a user may have; the rest of the file is read as they finish")
            }
            holding = true
        }
        return room
    }

    /// "LENGTH:SHA256" of the (up to) `tailBytes` bytes before `offset`.
    func fingerprint(_ fd: Int32, before offset: Int64) throws -> String {
        let length = Int(min(offset, Int64(Self.tailBytes)))
        var buf = [UInt8](repeating: 0, count: length)
        let n = try buf.withUnsafeMutableBytes { raw in
            try syscall("pread \(path)", blocking: { pread(fd, raw.baseAddress, length, off_t(offset - Int64(length))) })
        }
        return "\(n):" + SHA256.hex(Data(buf[0..<n]))
    }
}
