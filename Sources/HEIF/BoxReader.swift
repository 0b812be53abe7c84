/// A cursor over `[position, end)` of a HEIF file's bytes (ISO base media boxes, big-endian).
/// Every read is checked against `end` and every size and offset against the buffer, with
/// overflow-reporting arithmetic: hostile sizes and offsets are a `HEIFFile.Problem`,
/// never a trap or a read outside the buffer.
struct BoxReader {
    let bytes: UnsafeRawBufferPointer
    var position: Int
    let end: Int

    init(_ bytes: UnsafeRawBufferPointer, from start: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        position = start
        self.end = min(end ?? bytes.count, bytes.count)
    }

    var left: Int { end - position }

    mutating func uint(_ size: Int) throws -> Int {
        guard size >= 0, size <= 8, left >= size else { throw HEIFFile.Problem("truncated at byte \(position) (\(size) bytes wanted, \(max(0, left)) left)") }
        var v: UInt64 = 0
        for i in 0..<size { v = v << 8 | UInt64(bytes[position + i]) }
        position += size
        // An offset or size past Int.max cannot be in a buffer: refused, not wrapped.
        guard v <= UInt64(Int.max) else { throw HEIFFile.Problem("value \(v) at byte \(position - size) is out of range") }
        return Int(v)
    }

    mutating func u8() throws -> Int { try uint(1) }
    mutating func u16() throws -> Int { try uint(2) }
    mutating func u32() throws -> Int { try uint(4) }

    mutating func fourCC() throws -> String {
        guard left >= 4 else { throw HEIFFile.Problem("truncated at byte \(position) (a box type wanted)") }
        defer { position += 4 }
        return String(decoding: bytes[position..<(position + 4)], as: UTF8.self)
    }

    /// A NUL-terminated UTF-8 string (the NUL read too); one running to `end` is taken whole.
    mutating func cString() throws -> String {
        let stop = (position..<end).first { bytes[$0] == 0 } ?? end
        defer { position = min(stop + 1, end) }
        return String(decoding: bytes[position..<stop], as: UTF8.self)
    }

    mutating func skip(_ n: Int) throws {
        guard n >= 0, n <= left else { throw HEIFFile.Problem("truncated at byte \(position) (\(n) bytes to skip, \(max(0, left)) left)") }
        position += n
    }

    /// A full box's version and flags.
    mutating func versionFlags() throws -> (version: Int, flags: Int) {
        let v = try u32()
        return (v >> 24, v & 0xFF_FFFF)
    }

    /// One child box: its type and a reader over its payload; the cursor moves past it.
    mutating func box() throws -> (type: String, payload: BoxReader) {
        let start = position
        var size = try u32()
        let type = try fourCC()
        if size == 1 {
            size = try uint(8)
        } else if size == 0 {
            size = end - start
        }
        let header = position - start
        // `size > end - start`, not `start + size > end`: no addition that can overflow.
        guard size >= header, size <= end - start else {
            throw HEIFFile.Problem("box \"\(type)\" at byte \(start) claims \(size) bytes, \(end - start) are left")
        }
        position = start + size
        return (type, BoxReader(bytes, from: start + header, to: start + size))
    }

    /// Every child box, in order.
    mutating func boxes() throws -> [(type: String, payload: BoxReader)] {
        var out: [(type: String, payload: BoxReader)] = []
        while left > 0 { out.append(try box()) }
        return out
    }

    /// `offset + length` inside the buffer, both checked.
    func range(_ offset: Int, _ length: Int) throws -> Range<Int> {
        let (stop, overflow) = offset.addingReportingOverflow(length)
        guard offset >= 0, length >= 0, !overflow, stop <= bytes.count else {
            throw HEIFFile.Problem("data at byte \(offset) (\(length) bytes) is outside the file (\(bytes.count) bytes)")
        }
        return offset..<stop
    }
}
