import HEIF
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// Reads an image's format from its magic bytes and its dimensions from its headers,
/// without decoding pixels; for JPEG also walks the marker structure and (`scanData`)
/// the entropy-coded data, which catches truncation and most damage (invalid markers,
/// restart markers out of sequence) in one linear pass over the bytes. Without the scan,
/// a JPEG's first bytes up to its first scan (SOS) are enough.
public struct ImageProbe: Sendable, Equatable {
    public enum Format: String, Sendable, CaseIterable {
        case jpeg, png, webp, heic, avif
    }

    public let format: Format
    public let width: Int
    public let height: Int

    /// width x height, or nil when the product does not fit in 64 bits (a hostile header:
    /// 4294967295 x 4294967295 must be a clear failure, never an overflow trap).
    public var pixels: Int64? {
        let (p, overflow) = Int64(width).multipliedReportingOverflow(by: Int64(height))
        return overflow ? nil : p
    }

    public struct Problem: Error, Equatable, CustomStringConvertible {
        public let description: String
        init(_ d: String) { description = d }
    }

    /// The format named by the first bytes, or nil.
    /// The photo's bytes as read (and hash-checked) once: probed in place, not copied.
    public typealias Bytes = UnsafeRawBufferPointer

    public static func sniff(_ b: [UInt8]) -> Format? { b.withUnsafeBytes { sniff($0) } }
    public static func probe(_ b: [UInt8]) throws -> ImageProbe { try b.withUnsafeBytes { try probe($0) } }

    public static func sniff(_ b: Bytes) -> Format? {
        if b.count >= 3, b[0] == 0xFF, b[1] == 0xD8, b[2] == 0xFF { return .jpeg }
        if b.count >= 8, b[0..<8].elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if b.count >= 12, ascii(b, 0, 4) == "RIFF", ascii(b, 8, 4) == "WEBP" { return .webp }
        if b.count >= 12, ascii(b, 4, 4) == "ftyp", heifBrands.contains(ascii(b, 8, 4)) { return .heic }
        if b.count >= 12, ascii(b, 4, 4) == "ftyp", avifBrands.contains(ascii(b, 8, 4)) { return .avif }
        return nil
    }

    static let heifBrands: Set<String> = ["heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"]
    /// AV1 in HEIF (libheif decodes it with dav1d); its boxes are HEIC's.
    static let avifBrands: Set<String> = ["avif", "avis"]

    public static func probe(_ b: Bytes, scanData: Bool = true) throws -> ImageProbe {
        guard !b.isEmpty else { throw Problem("file is empty (0 bytes)") }
        guard var format = sniff(b) else { throw Problem("not a JPEG, PNG, WebP, HEIC or AVIF image (unrecognised magic bytes)") }
        let (w, h): (Int, Int)
        switch format {
        case .jpeg: (w, h) = try jpeg(b, scanData: scanData)
        case .png: (w, h) = try png(b)
        case .webp: (w, h) = try webp(b)
        case .heic, .avif:
            do { try HEIFFile.checkLimits(b) } catch let e as HEIFFile.Limit { throw Problem("HEIF is refused: \(e.description)") }
            (w, h) = try heic(b)
            format = HEIFFile.isAV1(b) ? .avif : .heic  // by the image's coding, not the brand
        }
        guard w > 0, h > 0 else { throw Problem("\(format.rawValue) header gives an empty size (\(w)x\(h))") }
        return ImageProbe(format: format, width: w, height: h)
    }

    /// w x h, saturating at Int.max (to compare hostile sizes without trapping).
    static func area(_ w: Int, _ h: Int) -> Int {
        let (p, overflow) = w.multipliedReportingOverflow(by: h)
        return overflow ? .max : p
    }

    static func ascii(_ b: Bytes, _ at: Int, _ n: Int) -> String {
        guard at + n <= b.count else { return "" }
        return String(decoding: b[at..<(at + n)], as: UTF8.self)
    }

    static func be16(_ b: Bytes, _ i: Int) -> Int { Int(b[i]) << 8 | Int(b[i + 1]) }
    static func be32(_ b: Bytes, _ i: Int) -> Int { be16(b, i) << 16 | be16(b, i + 2) }
    static func le16(_ b: Bytes, _ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 }
    static func le24(_ b: Bytes, _ i: Int) -> Int { le16(b, i) | Int(b[i + 2]) << 16 }
    static func le32(_ b: Bytes, _ i: Int) -> Int { le16(b, i) | le16(b, i + 2) << 16 }

    // MARK: JPEG

    static func jpeg(_ b: Bytes, scanData: Bool) throws -> (Int, Int) {
        var size: (Int, Int)?
        var i = 2
        let n = b.count
        while true {
            guard i + 1 < n else { throw Problem("JPEG is truncated (ends at byte \(n) before the end-of-image marker)") }
            guard b[i] == 0xFF else { throw Problem("JPEG is damaged: expected a marker at byte \(i)") }
            var m = b[i + 1]
            while m == 0xFF, i + 2 < n { i += 1; m = b[i + 1] }  // fill bytes
            if m == 0xD9 {
                guard let size else { throw Problem("JPEG has no frame header (SOF)") }
                return size
            }
            if (0xD0...0xD7).contains(m) || m == 0x01 { i += 2; continue }
            guard m >= 0xC0 else { throw Problem(String(format: "JPEG is damaged: invalid marker 0xFF%02X at byte %d", m, i)) }
            guard i + 3 < n else { throw Problem("JPEG is truncated inside a segment header") }
            let len = be16(b, i + 2)
            guard len >= 2, i + 2 + len <= n else { throw Problem("JPEG is truncated inside a 0xFF\(String(m, radix: 16, uppercase: true)) segment") }
            if isSOF(m) {
                guard len >= 8 else { throw Problem("JPEG frame header is too short") }
                size = (be16(b, i + 7), be16(b, i + 5))
            }
            i += 2 + len
            if m == 0xDA {
                guard let size else { throw Problem("JPEG scan starts before its frame header") }
                guard scanData else { return size }
                i = try entropyData(b, from: i)
            }
        }
    }

    static func isSOF(_ m: UInt8) -> Bool {
        (0xC0...0xCF).contains(m) && m != 0xC4 && m != 0xC8 && m != 0xCC
    }

    /// Skips entropy-coded data; returns the index of the marker that ends it.
    /// memchr finds each 0xFF (vectorised: ~0.5 ms for a 4 MB photo, against ~4 ms byte by byte).
    static func entropyData(_ b: Bytes, from start: Int) throws -> Int {
        var j = start
        var expectedRST: UInt8 = 0xD0
        let n = b.count
        while j + 1 < n {
            // Only a 0xFF with a byte after it matters: search up to n - 1.
            guard let base = b.baseAddress, let hit = memchr(base + j, 0xFF, n - 1 - j) else { break }
            j = base.distance(to: UnsafeRawPointer(hit))
            let nx = b[j + 1]
            if nx == 0x00 { j += 2; continue }
            if nx == 0xFF { j += 1; continue }
            if (0xD0...0xD7).contains(nx) {
                guard nx == expectedRST else {
                    throw Problem(String(format: "JPEG is damaged: restart marker 0xFF%02X out of sequence at byte %d", nx, j))
                }
                expectedRST = expectedRST == 0xD7 ? 0xD0 : expectedRST + 1
                j += 2
                continue
            }
            guard nx >= 0xC0 else {
                throw Problem(String(format: "JPEG is damaged: invalid marker 0xFF%02X in the image data at byte %d", nx, j))
            }
            return j
        }
        throw Problem("JPEG is truncated (image data ends at byte \(n) without an end-of-image marker)")
    }

    // MARK: PNG

    static func png(_ b: Bytes) throws -> (Int, Int) {
        guard b.count >= 33, ascii(b, 12, 4) == "IHDR" else { throw Problem("PNG is truncated or has no IHDR header") }
        // Walk the chunks to IEND: a cut file has no IEND.
        var i = 8
        while i + 8 <= b.count {
            let len = be32(b, i)
            let type = ascii(b, i + 4, 4)
            guard len >= 0, i + 12 + len <= b.count else { break }
            if type == "IEND" { return (be32(b, 16), be32(b, 20)) }
            i += 12 + len
        }
        throw Problem("PNG is truncated (no IEND chunk)")
    }

    // MARK: WebP

    static func webp(_ b: Bytes) throws -> (Int, Int) {
        let riffSize = le32(b, 4) + 8
        guard riffSize <= b.count else { throw Problem("WebP is truncated (RIFF says \(riffSize) bytes, file has \(b.count))") }
        guard b.count >= 30 else { throw Problem("WebP is too short for its header") }
        switch ascii(b, 12, 4) {
        case "VP8 ":
            guard b[23] == 0x9D, b[24] == 0x01, b[25] == 0x2A else { throw Problem("WebP (VP8) frame header is damaged") }
            return (le16(b, 26) & 0x3FFF, le16(b, 28) & 0x3FFF)
        case "VP8L":
            guard b[20] == 0x2F else { throw Problem("WebP (VP8L) header is damaged") }
            let bits = le32(b, 21)
            return ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
        case "VP8X":
            return (le24(b, 24) + 1, le24(b, 27) + 1)
        default:
            throw Problem("WebP has an unknown first chunk \"\(ascii(b, 12, 4))\"")
        }
    }

    // MARK: HEIC (ISO base media file format)

    /// The largest `ispe` (image spatial extent) in meta/iprp/ipco: the full image, not a
    /// thumbnail or a tile. Enough for the size limits; no decoding.
    static func heic(_ b: Bytes) throws -> (Int, Int) {
        var best: (Int, Int)?
        func walk(_ start: Int, _ end: Int, depth: Int) throws {
            var i = start
            while i + 8 <= end {
                var size = be32(b, i)
                let type = ascii(b, i + 4, 4)
                var header = 8
                if size == 1 {
                    guard i + 16 <= end else { throw Problem("HEIC box header is truncated") }
                    // A 64-bit size; anything past 2^31 cannot fit in a file we accept.
                    let high = be32(b, i + 8), low = be32(b, i + 12)
                    guard high < 0x8000_0000 else {
                        throw Problem("HEIC box \"\(type)\" at byte \(i) claims \(UInt64(high) << 32 | UInt64(low)) bytes, more than the file has (\(end - i))")
                    }
                    size = high << 32 | low
                    header = 16
                } else if size == 0 {
                    size = end - i
                }
                // `size > end - i`, not `i + size > end`: no addition that can overflow.
                guard size >= header, size <= end - i else {
                    throw Problem("HEIC is truncated (box \"\(type)\" at byte \(i) claims \(size) bytes, \(end - i) are left)")
                }
                switch type {
                case "meta" where depth < 4: try walk(i + header + 4, i + size, depth: depth + 1)  // full box
                case "iprp", "ipco": if depth < 4 { try walk(i + header, i + size, depth: depth + 1) }
                case "ispe":
                    guard size >= header + 12 else { throw Problem("HEIC ispe box is too short") }
                    let w = be32(b, i + header + 4), h = be32(b, i + header + 8)
                    if best == nil || area(w, h) > area(best!.0, best!.1) { best = (w, h) }
                default: break
                }
                i += size
            }
        }
        try walk(0, b.count, depth: 0)
        guard let best else { throw Problem("HEIC has no image size (ispe) property") }
        return best
    }
}
