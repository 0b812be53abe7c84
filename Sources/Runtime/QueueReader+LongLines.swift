import CPosix
import EventLoop
import Glibc
import Journal
import StageKit

/// Lines that are not read as jobs: a line longer than the limit (its end searched for
/// without reading holes) and lines quarantined whole with their line number and offset.
extension QueueReader {
    /// The offset of the newline ending the line at `line`, searched from `from` (or from
    /// where an earlier read stopped) for at most `searchBytesPerRead` bytes, or nil if not
    /// found yet (`report.more` when the budget ran out first). Holes, a sparse file's
    /// unwritten ranges, read as zeros and hold no newline: they are skipped, not read.
    func findNewline(_ fd: Int32, lineAt line: QueuePosition, from offset: Int64, _ report: inout Report) throws -> Int64? {
        let st = try QueueFileFollower.status(fd, path: path)
        var at = offset
        if let s = searched, s.inode == line.inode, s.generation == line.generation, s.line == line.offset, s.to <= Int64(st.st_size) {
            at = max(at, s.to)
        }
        defer { searched = (line.inode, line.generation, line.offset, at) }
        var budget = Self.searchBytesPerRead
        var buf = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            do {
                let data = try syscall("lseek SEEK_DATA \(path)", blocking: { pm_seek_data(fd, off_t(at)) })
                if data > at { at = Int64(data) }
            } catch let e as SystemError where e.errno == ENXIO {
                return nil  // only a hole (or nothing) up to the end
            } catch {
                // No hole map here (the file system cannot say): read on from `at`.
            }
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

    func quarantineName(_ pos: QueuePosition) -> String {
        QuarantinedLines.prefix + "\(name.replacingOccurrences(of: "/", with: "_"))-g\(pos.generation)-\(pos.offset).jsonl"
    }

    func quarantineReason(_ reason: String, _ pos: QueuePosition) -> JSONValue {
        Quarantine.reason(reason, extra: ["source": .string(name), "line": .int(pos.line), "offset": .int(pos.offset)])
    }

    /// Whether the file's owner holds as many quarantined lines as a user may: their next
    /// bad line, and the rest of the file, wait unread (said once until it is read on).
    func atBadLineCap(_ report: inout Report) -> Bool {
        guard quarantine.lines.atCap(owner.uid) else {
            heldAtBadLines = false
            return false
        }
        if !heldAtBadLines {
            report.notes.append("\(name): \(owner.name) has \(quarantine.lines.maxPerUser) bad queue lines in quarantine, the most a user may have; "
                                + "the rest of the file is read once retention or an admin removes some")
            heldAtBadLines = true
        }
        return true
    }

    func quarantineLine(_ bytes: ArraySlice<UInt8>, at pos: QueuePosition, reason: String, _ report: inout Report) throws {
        let saved = try quarantine.writeLine(bytes, name: quarantineName(pos), reason: quarantineReason(reason, pos), owner: owner.uid)
        report.quarantined.append(saved + ": line \(pos.line): " + reason)
    }

    func quarantineLongLine(_ fd: Int32, at pos: QueuePosition, length: Int64, reason: String, _ report: inout Report) throws {
        let saved = try quarantine.copyLine(from: fd, offset: pos.offset, length: length, name: quarantineName(pos),
                                            reason: quarantineReason(reason, pos), owner: owner.uid)
        report.quarantined.append(saved + ": line \(pos.line): " + reason)
    }
}
