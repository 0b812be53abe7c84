import Glibc

/// How many scans a JPEG has. A progressive JPEG may repeat a scan without end, and each
/// is a pass of the decoder over every block: 10,000 copies of a 53-byte scan (561 KB) held
/// a compress slot for a minute and were taken as a good photo; a 50 MB file would hold
/// one for hours (an attacker's finding). Encoders write about 10 (libjpeg's progressive
/// script) and none near `limit`; a JPEG past it is refused before any decoder reads it.
enum JPEGScans {
    static let limit = 100

    /// The SOS segments of `b`, counted up to `limit + 1`: segments are skipped by their
    /// length, entropy-coded data up to its next marker (0xFF00 and restarts are inside it).
    /// Damage ends the count: the decoder then says what is wrong.
    static func count(_ b: UnsafeRawBufferPointer) -> Int {
        guard let base = b.baseAddress else { return 0 }
        var i = 2, scans = 0
        let n = b.count
        while i + 3 < n, scans <= limit, b[i] == 0xFF {
            let m = b[i + 1]
            if m == 0xFF { i += 1; continue }  // fill byte
            if m == 0xD9 { break }
            if (0xD0...0xD7).contains(m) || m == 0x01 { i += 2; continue }
            i += 2 + (Int(b[i + 2]) << 8 | Int(b[i + 3]))
            guard m == 0xDA else { continue }
            scans += 1
            while i + 1 < n {
                guard let hit = memchr(base + i, 0xFF, n - 1 - i) else { return scans }
                i = base.distance(to: UnsafeRawPointer(hit))
                let next = b[i + 1]
                if next == 0x00 || (0xD0...0xD7).contains(next) { i += 2 } else if next == 0xFF { i += 1 } else { break }
            }
        }
        return scans
    }
}
