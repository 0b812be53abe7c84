import CPosix
import EventLoop
import Foundation
import Glibc
import PhotomemoCore
import StageKit

/// `HOME/quarantine/`: files and queue lines that can never succeed, each with a
/// `NAME.reason.json` beside it. The reason is written before the file moves in, and both
/// steps are idempotent, so a crash in between is finished by running it again.
struct Quarantine: Sendable {
    let folder: String
    /// Only files in the inbox are moved; a photo under an --allow-root belongs to its owner.
    let inbox: String
    /// The definition's `inbox.originals` (set on reload): with `keep` nothing in the inbox
    /// is moved — a sync tool owns it — and a bad photo's reason is only recorded.
    let originals: LockedValue<InboxOptions.Originals>
    /// Each user's bad queue lines here (at most `QuarantinedLines.maxPerUser`).
    let lines: QuarantinedLines

    init(folder: String, inbox: String, originals: LockedValue<InboxOptions.Originals> = LockedValue(.delete),
         lines: QuarantinedLines? = nil) {
        (self.folder, self.inbox, self.originals) = (folder, inbox, originals)
        self.lines = lines ?? QuarantinedLines(folder: folder)
    }

    /// Whether inbox files stay where they are (`inbox.originals` is `keep`).
    var keepsInbox: Bool { originals.value == .keep }

    /// What a job's `quarantine` says of an inbox file a `keep` inbox leaves in place.
    func keptInPlace(_ path: String) -> String {
        "(kept in place: \(path); inbox.originals is keep, so nothing in the inbox is moved)"
    }

    /// Moves the inbox entry `base` of `folder` (held open beneath the inbox: no link is
    /// followed on the way) into quarantine under `name`'s flat form
    /// (`PhotoPolicy.flatName`: `DCIM/a.jpg` is `DCIM%2Fa.jpg`, no folder is made; then
    /// `entryName`: never a name only the daemon's files have), or that
    /// with `~jobN` (then `~jobN~2`, ...) when it is taken by another entry. Returns the new path.
    /// A name is another entry's when a file or a reason is there, unless the reason is
    /// this job's (this move, run again after a crash). A name is taken by creating its
    /// reason where none is (`DurableFile.create`) and the file moves in
    /// without replacing anything (`RENAME_NOREPLACE`): two entries of one flat name
    /// quarantined at the same instant (the intake lane and a stage's failure) each keep theirs.
    /// `gone`: the file was not there when its job failed: only the reason is written (a
    /// file back under that name since is a new arrival, taken again, not this job's), and
    /// what is returned says so, `(not moved: PATH was gone; its reason is REASON)`.
    /// With `keep`, an inbox file is not moved and no reason file is written: the job's
    /// `quarantine` says it was kept in place, and its reason is the job's error.
    func moveEntry(_ base: String, in folder: OpenFolder?, name: String, reason: JSONValue, job: Int64?, gone: Bool = false) throws -> String {
        try moveEntry(cName: Array(base.utf8CString), in: folder, name: name, reason: reason, job: job, gone: gone)
    }

    /// `moveEntry` of an entry whose name in `folder` is the bytes `cName` (NUL-ended:
    /// a name that is not UTF-8 has no `String`).
    func moveEntry(cName base: [CChar], in folder: OpenFolder?, name: String, reason: JSONValue, job: Int64?, gone: Bool = false) throws -> String {
        if keepsInbox { return keptInPlace(inbox + "/" + name) }
        let flat = self.folder + "/" + Self.entryName(PhotoPolicy.flatName(name))
        let other = job.map { "~job\($0)" } ?? "~\(Int64(unixNow() * 1000))"
        let present = { () -> Bool in
            var st = stat()
            return folder.map { fstatat($0.fd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 } ?? false
        }
        for n in 1...128 {
            // Past 64 names (others' bad photos can be named like this job's next ones) a
            // random one: no one can take every name a job could use.
            let target = n == 1 ? flat : n == 2 ? flat + other : n <= 64 ? flat + other + "~\(n - 1)"
                : flat + other + "~" + String(UInt64.random(in: 1...UInt64.max), radix: 16)
            let reasonPath = target + ".reason.json"
            if Files.exists(target) || Files.exists(reasonPath) {
                // This job's reason: this move run again after a crash, the file moved or not yet.
                guard job != nil, Self.job(ofEntry: target) == job, !(present() && Files.exists(target)) else { continue }
                try DurableFile.write(reason.jsonData, to: reasonPath)
            } else if try !DurableFile.create(reason.jsonData, at: reasonPath) {
                continue  // taken at this instant by another entry
            }
            if !gone, let folder, present() {
                do {
                    try syscall("rename \(folder.path)/\(name)", blocking: { pm_rename_noreplace(folder.fd, base, AT_FDCWD, target) })
                } catch let e as SystemError where e.errno == EEXIST {
                    unlink(reasonPath)  // an entry came in without a reason (not one of ours): the next name
                    continue
                }
                try DurableFile.fsyncFolder(self.folder)
                try syscall("fsync \(folder.path)", blocking: { fsync(folder.fd) })
            }
            // Nothing moved now: the file is there from a run before a crash, or it was gone.
            return Files.exists(target) ? target : "(not moved: \(inbox)/\(name) was gone; its reason is \(reasonPath))"
        }
        throw PhotomemoError(.io, "no free name in quarantine for \(name)")
    }

    /// What an entry of flat name `flatName` is called in quarantine: names only the daemon
    /// writes are never an entry's. A bad queue line's (`queue-line-…`: a line rewritten after
    /// a crash replaces itself, and they are counted by owner) gets `inbox-` before it, and a
    /// reason's (`….reason.json`, any case: on a case-folding file system it would meet one)
    /// `~entry` after it: another job's move found it as its reason, trusted its `job` and
    /// wrote over it.
    static func entryName(_ flatName: String) -> String {
        let name = flatName.hasPrefix(QuarantinedLines.prefix) ? "inbox-" + flatName : flatName
        return name.lowercased().hasSuffix(".reason.json") ? name + "~entry" : name
    }

    /// Names `job` in the reason beside the entry moved to `path` with `reason`: an intake
    /// rejection's job is recorded after its entry is moved (a crash between leaves an entry
    /// with no job, never a job whose file is still in the inbox to be taken again).
    func name(job: Int64, inReasonOf path: String, reason: JSONValue) throws {
        guard !keepsInbox, case .object(var o) = reason else { return }
        o["job"] = .int(job)
        try DurableFile.write(JSONValue.object(o).jsonData, to: path + ".reason.json")
    }

    /// The job the reason beside the entry at `path` names, if any.
    static func job(ofEntry path: String) -> Int64? {
        (try? JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: path + ".reason.json"))))?["job"]?.intValue
    }

    /// Writes a bad queue line of `owner`'s as a file of its own with its reason. Its 4 KiB
    /// blocks of zeros stay holes, as `copyLine` keeps a long line's: a sparse queue file's
    /// lines of zeros cost their writer nothing, and 300 lines of 1 MiB were written out as
    /// 300 MB (attack review, 2026-12-04).
    func writeLine(_ bytes: ArraySlice<UInt8>, name: String, reason: JSONValue, owner: uid_t) throws -> String {
        let target = folder + "/" + name
        try DurableFile.write(reason.jsonData, to: target + ".reason.json")
        try DurableFile.write(to: target) { out in
            let block = 4096
            let zeros = { (start: Int) in bytes[start..<min(start + block, bytes.endIndex)].allSatisfy { $0 == 0 } }
            var at = bytes.startIndex
            while at < bytes.endIndex {
                // The next run of blocks that are not all zeros, written at its offset.
                while at < bytes.endIndex, zeros(at) { at = min(at + block, bytes.endIndex) }
                var end = at
                while end < bytes.endIndex, !zeros(end) { end = min(end + block, bytes.endIndex) }
                guard at < end else { break }
                try syscall("lseek \(target)", blocking: { lseek(out, off_t(at - bytes.startIndex), SEEK_SET) })
                try DurableFile.writeAll(out, Data(bytes[at..<end]), path: target)
                at = end
            }
            try syscall("ftruncate \(target)", blocking: { ftruncate(out, off_t(bytes.count)) })
        }
        return ownLine(target, owner)
    }

    /// A quarantined line's file is its writer's (`QuarantinedLines` counts them by owner;
    /// a disk quota charges them). Only root can give it away: otherwise it is already theirs.
    private func ownLine(_ target: String, _ owner: uid_t) -> String {
        if geteuid() == 0 { _ = lchown(target, owner, gid_t.max) }
        lines.added(owner)
        return target
    }

    /// At most this much of an over-long line is kept: a sparse queue file costs its writer
    /// nothing, and the daemon (as root) must not fill the disk copying it.
    static let maxKeptLineBytes: Int64 = 16 << 20

    /// Copies a line too long to hold in memory (`length` bytes at `offset` of `fd`, up to
    /// `maxKeptLineBytes`), a megabyte at a time, as a file of its own with its reason.
    func copyLine(from fd: Int32, offset: Int64, length fullLength: Int64, name: String, reason: JSONValue, owner: uid_t) throws -> String {
        let length = min(fullLength, Self.maxKeptLineBytes)
        let target = folder + "/" + name
        try DurableFile.write(reason.jsonData, to: target + ".reason.json")
        try DurableFile.write(to: target) { out in
            var buf = [UInt8](repeating: 0, count: 1 << 20)
            var done: Int64 = 0, end = length
            while done < length {
                // Holes (a sparse file's unwritten ranges) stay holes in the copy: it costs the
                // disk what the line cost its writer, not up to 16 MiB of zeros a line.
                var want = Int(min(Int64(buf.count), length - done))
                if let data = Self.seek(fd, offset + done, pm_seek_data) {
                    guard data >= 0, data - offset < length else { break }
                    done = max(done, data - offset)
                    let hole = Self.seek(fd, offset + done, pm_seek_hole) ?? Int64.max
                    want = Int(min(Int64(buf.count), length - done, max(1, hole - offset - done)))
                }
                let n = try buf.withUnsafeMutableBytes { raw in
                    try syscall("pread queue line", blocking: { pread(fd, raw.baseAddress, want, off_t(offset + done)) })
                }
                if n == 0 {
                    end = done
                    break
                }
                try syscall("lseek \(target)", blocking: { lseek(out, off_t(done), SEEK_SET) })
                try DurableFile.writeAll(out, Data(buf[0..<n]), path: target)
                done += Int64(n)
            }
            var st = stat()
            if fstat(fd, &st) == 0 { end = min(end, max(done, Int64(st.st_size) - offset)) }
            try syscall("ftruncate \(target)", blocking: { ftruncate(out, off_t(max(done, end))) })
        }
        return ownLine(target, owner)
    }

    /// `lseek` with SEEK_DATA or SEEK_HOLE: the offset, -1 when only a hole is left (ENXIO),
    /// nil when the file system keeps no hole map (read on densely).
    private static func seek(_ fd: Int32, _ at: Int64, _ how: (Int32, off_t) -> off_t) -> Int64? {
        let r = how(fd, off_t(at))
        if r >= 0 { return Int64(r) }
        return errno == ENXIO ? -1 : nil
    }

    static func reason(_ reason: String, job: Int64? = nil, stage: String? = nil, extra: [String: JSONValue] = [:]) -> JSONValue {
        var o = extra
        o["reason"] = .string(reason)
        o["time"] = .string(isoTimestamp(unixNow()))
        if let job { o["job"] = .int(job) }
        if let stage { o["stage"] = .string(stage) }
        return .object(o)
    }
}
