/// Cuts one chunk of a queue file, read from a line's start, into whole lines. Pure: no
/// file, no position, so the cases that matter (a partial last line, CRLF, blank lines, a
/// line longer than the cap) are tested without a loop or a daemon.
struct QueueLineFramer {
    /// One whole line of the chunk.
    struct Line: Equatable {
        /// Its bytes without the newline (and without a CR before it).
        let bytes: ArraySlice<UInt8>
        /// Where it starts, from the chunk's start.
        let start: Int
        /// Its length with its newline: the offset moves on by this much.
        let length: Int
        /// Only spaces and tabs (or nothing): skipped, not a job and not an error.
        var isBlank: Bool { bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 } }
    }

    let chunk: ArraySlice<UInt8>
    /// Bytes of whole lines handed out so far.
    private(set) var consumed = 0

    init(_ chunk: ArraySlice<UInt8>) { self.chunk = chunk }

    /// The next whole line, or nil when what is left has no newline (yet).
    mutating func next() -> Line? {
        let from = chunk.startIndex + consumed
        guard let nl = chunk[from...].firstIndex(of: 0x0A) else { return nil }
        var bytes = chunk[from..<nl]
        if bytes.last == 0x0D { bytes = bytes.dropLast() }
        let line = Line(bytes: bytes, start: consumed, length: nl + 1 - from)
        consumed += line.length
        return line
    }

    /// The chunk is the start of one line longer than `cap` with no newline in it: its end
    /// is searched for in the file (`QueueReader.findNewline`), not read whole.
    func startsOverlongLine(cap: Int) -> Bool {
        consumed == 0 && chunk.count > cap && !chunk.contains(0x0A)
    }
}
