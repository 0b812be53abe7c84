import Glibc
import Synchronization
import StageKit

/// Which claimed jobs this process has started (job → attempt), kept where a SIGKILL
/// cannot take it: `HOME/started`, a file mapped shared into memory. The journal shows a
/// job held ahead (or parked) as `running` like one whose stage runs; the next start
/// reads these marks so only a run that began counts as an interrupted attempt.
///
/// The loop writes the marks on each run's start and end: plain memory stores, no system
/// call, so no blocking on the loop; the kernel has the page the moment they are made,
/// and a killed process leaves it to the next. Two halves and one word saying which is
/// current: a new set is written into the other half, then the word flips, so a kill at
/// any instant leaves one whole set. A power loss may leave an older page or none: then
/// the marks are stale or missing, and a stale mark names an attempt a job really started.
///
///     [magic "PMSTART1"][current half][half 0: count, (job, attempt) × capacity][half 1]
final class StartMarks {
    static let capacity = 4096
    private static let magic: UInt64 = 0x3154_5241_5453_4D50  // "PMSTART1", little-endian
    /// Words in a half: its count, then two words an entry.
    private static let halfWords = 1 + 2 * capacity
    private static let fileBytes = (2 + 2 * halfWords) * 8
    /// A count meaning more runs started than the half holds: the set is unknown.
    private static let overflow = UInt64.max

    private let words: UnsafeMutablePointer<UInt64>
    private var current = 0
    private var started: [Int64: Int] = [:]

    /// The marks the last process left in `path`: nil when there are none to trust (no
    /// file, another layout, more runs than it holds), and every interrupted job counts.
    static func lastStarted(in path: String) -> [Int64: Int]? {
        guard let fd = try? syscall("open \(path)", blocking: { open(path, O_RDONLY | O_CLOEXEC) }) else { return nil }
        defer { close(fd) }
        var buffer = [UInt64](repeating: 0, count: fileBytes / 8)
        let got = buffer.withUnsafeMutableBytes { b in (try? syscall("read \(path)", blocking: { pread(fd, b.baseAddress, b.count, 0) })) ?? -1 }
        guard got == fileBytes, buffer[0] == magic, buffer[1] < 2 else { return nil }
        let half = 2 + Int(buffer[1]) * halfWords
        guard buffer[half] <= UInt64(capacity) else { return nil }
        var marks: [Int64: Int] = [:]
        for i in 0..<Int(buffer[half]) {
            marks[Int64(bitPattern: buffer[half + 1 + 2 * i])] = Int(truncatingIfNeeded: buffer[half + 2 + 2 * i])
        }
        return marks
    }

    /// Maps `path` afresh (the last process's marks must have been read), with no marks.
    init(path: String) throws {
        let fd = try syscall("open \(path)", blocking: { open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640) })
        defer { close(fd) }
        try syscall("ftruncate \(path)", blocking: { ftruncate(fd, off_t(Self.fileBytes)) })
        let base = try syscall("mmap \(path)", pointer: { () -> UnsafeMutableRawPointer? in
            let p = mmap(nil, Self.fileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
            return p == MAP_FAILED ? nil : p
        })
        words = base.bindMemory(to: UInt64.self, capacity: Self.fileBytes / 8)
        words[0] = Self.magic
        publish()
    }

    deinit { munmap(words, Self.fileBytes) }

    /// A run of these jobs starts now.
    func started(_ jobs: [(id: Int64, attempt: Int)]) {
        for j in jobs { started[j.id] = j.attempt }
        publish()
    }

    /// These jobs' runs ended and their outcomes are written (or they went back unstarted).
    func ended(_ ids: [Int64]) {
        for id in ids { started[id] = nil }
        publish()
    }

    /// Writes the set into the half not current, then makes it current.
    private func publish() {
        let next = 1 - current, half = words + 2 + next * Self.halfWords
        if started.count > Self.capacity {
            half[0] = Self.overflow
        } else {
            for (i, (id, attempt)) in started.enumerated() {
                half[1 + 2 * i] = UInt64(bitPattern: id)
                half[2 + 2 * i] = UInt64(attempt)
            }
            half[0] = UInt64(started.count)
        }
        // The half's words before the flip: a kill after the flip finds them all there.
        atomicMemoryFence(ordering: .releasing)
        words[1] = UInt64(next)
        current = next
    }
}
