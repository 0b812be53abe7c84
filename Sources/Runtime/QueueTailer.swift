import EventLoop
import Foundation
import Glibc
import Journal
import PhotomemoCore
import StageKit

/// Tails the queue files of one folder — `HOME/queue.jsonl`, or every
/// `HOME/queue.d/*.jsonl` — by watching the folder: works before a file exists and
/// survives replacement. Every event means "read the files to their end now"; reads run on
/// the intake lane and coalesce (one in flight, at most one more queued).
final class QueueTailer {
    /// What `status` shows of one queue file.
    struct FileState: Sendable {
        let name: String
        let owner: UInt32?
        let unreadBytes: Int64
        /// Why the file is not read (StrictModes), if it is not.
        let refused: String?
    }

    private let loop: EventLoop
    private let lane: SerialLane
    private let folder: QueueFolder
    private let onJobs: () -> Void
    private let events: EventBus
    private var watcher: FolderWatcher?
    private let pollTimer: LoopTimer
    private var reading = false
    private var again = false
    /// Whether the folder's entries may have changed since it was last listed (a file
    /// made, moved or removed; the poll): an append to a file read already needs no new
    /// listing, and a folder of 20,000 names took most of a core to list at every append.
    private var relist = true
    /// After close, a read in flight finishes but schedules no other.
    private var closed = false
    private(set) var files: [String: FileState] = [:]

    /// Backlog: bytes that will be read. A refused file's are not (it is not read as it
    /// is; `status` shows it with its error), or the daemon could never be idle.
    var unreadBytes: Int64 { files.values.filter { $0.refused == nil }.saturatedSum(\.unreadBytes) }

    /// The poll period of the safety-net timer (1 s at most without inotify).
    private let pollSeconds: Double

    init(loop: EventLoop, lane: SerialLane, folder: QueueFolder, events: EventBus, pollSeconds: Double,
         onJobs: @escaping () -> Void) throws {
        self.pollSeconds = pollSeconds
        self.loop = loop
        self.lane = lane
        self.folder = folder
        self.events = events
        self.onJobs = onJobs
        pollTimer = try LoopTimer(loop: loop)
    }

    func start() {
        do {
            watcher = try FolderWatcher(loop: loop, path: folder.path, modifications: true) { [unowned self] events in
                let relevant = events.contains {
                    switch $0 {
                    case .closedAfterWrite(let n), .modified(let n): return self.folder.isQueueFile(n)
                    case .movedIn(let n), .created(let n):
                        if self.folder.isQueueFile(n) { self.relist = true }
                        return self.folder.isQueueFile(n)
                    case .removed(let n):
                        if self.folder.isQueueFile(n) { self.relist = true }
                        return false
                    case .folderAppeared, .folderRemoved: return false
                    case .overflow, .folderGone:
                        self.relist = true
                        return true
                    }
                }
                if relevant { self.read() }
            }
        } catch {
            Log.warning("cannot watch \(folder.path) with inotify (\(error)); polling its queue files")
        }
        read()
        // A safety net for missed events (and the only trigger without inotify).
        let every = UInt64((watcher == nil ? min(pollSeconds, 1) : pollSeconds) * 1000)
        pollTimer.start(afterMs: every, repeatMs: every) { [unowned self] in
            self.relist = true
            self.read()
        }
    }

    func close() {
        closed = true
        watcher?.close()
        pollTimer.close()
    }

    func read() {
        guard !closed else { return }
        guard !reading else { again = true; return }
        reading = true
        let folder = self.folder, relist = self.relist
        self.relist = false
        lane.enqueue({ folder.catchUp(relist: relist) }) { [unowned self] results in
            self.reading = false
            var next: [String: FileState] = [:]
            var jobs = false
            for (name, result) in results {
                switch result {
                case .success(let report):
                    if report.owner != nil || report.refused != nil {
                        next[name] = FileState(name: name, owner: report.owner, unreadBytes: report.unreadBytes, refused: report.refused)
                    }
                    if let refused = report.refused, self.files[name]?.refused != refused { Log.error(refused) }
                    self.log(report, source: name)
                    jobs = jobs || !report.outcomes.isEmpty
                    // Stopped at its budget: the rest is read next, behind what else waits on the lane.
                    if report.more { self.again = true }
                case .failure(let error):
                    Log.error("reading \(name): \(error); will retry")
                    if let old = self.files[name] { next[name] = old }
                }
            }
            self.files = next
            if jobs { self.onJobs() }
            if self.again {
                self.again = false
                self.read()
            }
        }
    }

    private func log(_ report: QueueReader.Report, source: String) {
        for n in report.notes { Log.notice(n) }
        for q in report.quarantined { Log.warning("quarantined \(q)") }
        for (o, owner) in report.outcomes {
            switch o {
            case .created(let job, let state): Log.info("memo accepted (\(state.rawValue))", job: job)
            case .joined(let job): Log.info("memo joined its photo's job", job: job)
            case .duplicate(let job, let of): Log.info("memo key already used by job \(of)", job: job)
            case .failed(let job, let reason): Log.warning(reason, job: job)
            case .alreadyTaken: break
            }
            events.publish(o, source: source, owner: owner)
        }
    }
}

/// The queue files of one folder and a reader for each, used only on the intake lane.
final class QueueFolder: @unchecked Sendable {
    // Safe: `readers`, `listing` and `refusals` are touched only on the serial intake lane.
    let path: String
    /// The folder relative to the home ("" for the home itself), for the files' names.
    private let prefix: String
    let isQueueFile: @Sendable (String) -> Bool
    private let makeReader: (_ path: String, _ name: String) -> QueueReader
    private var readers: [String: QueueReader] = [:]
    /// The last listing (`queueFiles`), kept for reads that need no new one, and what it
    /// refused as a whole (an owner's files past the cap, names that are not UTF-8).
    private var listing: (named: [String: UInt32], undecodable: [(shown: String, owner: UInt32)])?
    private var refusals: [String: Result<QueueReader.Report, Error>] = [:]

    init(path: String, prefix: String, isQueueFile: @escaping @Sendable (String) -> Bool,
         makeReader: @escaping (_ path: String, _ name: String) -> QueueReader) {
        self.path = path
        self.prefix = prefix
        self.isQueueFile = isQueueFile
        self.makeReader = makeReader
    }

    /// Queue files read per owner: the contract's is one (`queue.d/NAME.jsonl`). Each read
    /// file holds a descriptor and costs a journal read at every catch-up: a user's 20,000
    /// empty `.jsonl` files took every descriptor the daemon had, and intake with them.
    static let filesPerOwner = 16

    /// Reads every queue file in the folder (and any replaced one still held) to its end.
    /// Of an owner's files, those already read and then the first by name, up to
    /// `filesPerOwner`; the rest are refused in one entry per owner.
    func catchUp(relist: Bool = true) -> [String: Result<QueueReader.Report, Error>] {
        if relist || listing == nil { takeListing(queueFiles()) }
        let present = listing?.named ?? [:]
        var out = refusals
        for (name, reader) in readers {
            let result = Result { try reader.catchUp() }
            out[name] = result
            // Gone and drained: forget the reader (its position stays in the journal).
            if case .success(let r) = result, r.owner == nil, r.refused == nil, present[String(name.dropFirst(prefix.count))] == nil {
                readers.removeValue(forKey: name)
            }
        }
        return out
    }

    /// A new listing: readers for the files to read (an owner's read ones, then the first
    /// by name, up to `filesPerOwner`), and the entries refused as a whole.
    private func takeListing(_ new: (named: [String: UInt32], undecodable: [(shown: String, owner: UInt32)])) {
        listing = new
        refusals = [:]
        var readCount: [UInt32: Int] = [:], over = Set<UInt32>()
        for (file, owner) in new.named where readers[prefix + file] != nil { readCount[owner, default: 0] += 1 }
        for (file, owner) in new.named.sorted(by: { $0.key < $1.key }) where readers[prefix + file] == nil {
            guard readCount[owner, default: 0] < Self.filesPerOwner else {
                over.insert(owner)
                continue
            }
            readCount[owner, default: 0] += 1
            readers[prefix + file] = makeReader(path + "/" + file, prefix + file)
        }
        for owner in over {
            var refused = QueueReader.Report()
            refused.refused = "\(UnixUser.nameOrNumber(owner)) has more than \(Self.filesPerOwner) queue files in \(path): only \(Self.filesPerOwner) are read "
                + "(those read before, then the first by name); remove the others"
            refused.owner = owner
            refusals["\(prefix)*.jsonl (\(UnixUser.nameOrNumber(owner)))"] = .success(refused)
        }
        for (shown, owner) in new.undecodable {
            var refused = QueueReader.Report()
            refused.refused = "\(path)/\(shown): the file name is not valid UTF-8, so it is not read; rename it (its lines are read from the start)"
            refused.owner = owner
            // Keyed past `.jsonl`: no queue file's key, not even one named `bad\xFF.jsonl`
            // in those very characters, can be this one's and hide its refusal.
            refusals[prefix + shown + " (not UTF-8)"] = .success(refused)
        }
    }

    /// The folder's queue files, in one pass, with their owners (lstat: a link is its own
    /// entry): those named in UTF-8, and those whose names are not (Foundation's listing
    /// left them out, so they were never read and nothing said why), each shown escaped
    /// (`\xFF`) with its owner.
    private func queueFiles() -> (named: [String: UInt32], undecodable: [(shown: String, owner: UInt32)]) {
        guard let dir = opendir(path) else { return ([:], []) }
        defer { closedir(dir) }
        var named: [String: UInt32] = [:], undecodable: [(String, UInt32)] = []
        while let ent = readdir(dir) {
            let bytes = withUnsafeBytes(of: ent.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            let name = String(validating: bytes, as: UTF8.self)
            guard isQueueFile(name ?? String(decoding: bytes, as: UTF8.self)) else { continue }
            var st = stat()
            guard fstatat(dirfd(dir), bytes.map { CChar(bitPattern: $0) } + [0], &st, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            if let name {
                named[name] = st.st_uid
            } else {
                undecodable.append((Files.shown(bytes), st.st_uid))
            }
        }
        return (named, undecodable)
    }
}
