/// The item tables of a HEIF `meta` box: item types (`iinf`), where each item's bytes are
/// (`iloc`, in the file or in `idat`), references between items (`iref`) and each item's
/// properties (`iprp`: `ipco` lists them, `ipma` associates them). Every count, offset and
/// length is checked against the buffer before use (BoxReader).
struct Items {
    struct Reference {
        let type: String
        let from: Int
        let to: [Int]
    }

    let bytes: UnsafeRawBufferPointer
    var primary = -1
    var types: [Int: String] = [:]
    var locations: [Int: [Range<Int>]] = [:]
    var refs: [Reference] = []
    var propertyBoxes: [(type: String, payload: BoxReader)] = []
    var associations: [Int: [Int]] = [:]
    /// Items stored by a construction method this does not read (2: from other items).
    var elsewhere: [Int: Int] = [:]

    /// Bounds on what a file may declare, checked while reading (validate refuses a file
    /// past them before libheif parses it): libheif's header parse takes seconds for tens
    /// of thousands of items, and it concatenates an item's extents, so 32 extents that
    /// each span a 16 MB file made it allocate over 500 MB.
    static let maxItems = 4096
    static let maxExtents = 32

    init(_ meta: BoxReader) throws {
        bytes = meta.bytes
        var m = meta
        var iloc: BoxReader?, idat: Range<Int>?
        for (type, b) in try m.boxes() {
            var b = b
            switch type {
            case "hdlr":
                _ = try b.versionFlags()
                try b.skip(4)
                guard try b.fourCC() == "pict" else { throw HEIFFile.Problem("meta handler is not pict") }
            case "pitm":
                let v = try b.versionFlags().version
                primary = try b.uint(v == 0 ? 2 : 4)
            case "iinf": try readItemInfo(b)
            case "iloc": iloc = b
            case "idat": idat = b.position..<b.end
            case "iref": try readReferences(b)
            case "iprp": try readProperties(b)
            default: break
            }
        }
        guard let iloc else { throw HEIFFile.Problem("no iloc box") }
        try readLocations(iloc, idat: idat)
    }

    mutating func readItemInfo(_ box: BoxReader) throws {
        var b = box
        let v = try b.versionFlags().version
        let count = try b.uint(v == 0 ? 2 : 4)
        guard count <= Self.maxItems else { throw HEIFFile.Limit("it declares \(count) items; at most \(Self.maxItems) are read") }
        for _ in 0..<min(count, b.left / 8 + 1) {
            guard b.left > 0 else { break }
            var (type, e) = try b.box()
            guard type == "infe" else { continue }
            let ev = try e.versionFlags().version
            guard ev >= 2 else { continue }  // versions 0 and 1 describe no item types
            let id = try e.uint(ev == 2 ? 2 : 4)
            try e.skip(2)
            types[id] = try e.fourCC()
        }
    }

    mutating func readReferences(_ box: BoxReader) throws {
        var b = box
        let v = try b.versionFlags().version
        let size = v == 0 ? 2 : 4
        while b.left > 0 {
            var (type, r) = try b.box()
            let from = try r.uint(size)
            let count = try r.u16()
            guard count * size <= r.left else { throw HEIFFile.Problem("iref \(type) lists \(count) items in \(r.left) bytes") }
            refs.append(Reference(type: type, from: from, to: try (0..<count).map { _ in try r.uint(size) }))
        }
    }

    mutating func readProperties(_ box: BoxReader) throws {
        var b = box
        for (type, p) in try b.boxes() {
            var p = p
            if type == "ipco" { propertyBoxes = try p.boxes(); continue }
            guard type == "ipma" else { continue }
            let (v, flags) = try p.versionFlags()
            let count = try p.u32()
            for _ in 0..<count {
                guard p.left > 0 else { throw HEIFFile.Problem("ipma is truncated") }
                let id = try p.uint(v < 1 ? 2 : 4)
                let n = try p.u8()
                // The top bit says "essential"; the rest is a 1-based index into ipco (0: none).
                let wide = flags & 1 == 1
                associations[id, default: []] += try (0..<n).map { _ in try p.uint(wide ? 2 : 1) & (wide ? 0x7FFF : 0x7F) }
            }
        }
    }

    mutating func readLocations(_ box: BoxReader, idat: Range<Int>?) throws {
        var b = box
        let v = try b.versionFlags().version
        guard v <= 2 else { throw HEIFFile.Problem("iloc version \(v)") }
        let sizes = try b.u8(), more = try b.u8()
        let offsetSize = sizes >> 4, lengthSize = sizes & 15, baseSize = more >> 4, indexSize = v >= 1 ? more & 15 : 0
        guard [offsetSize, lengthSize, baseSize, indexSize].allSatisfy({ [0, 4, 8].contains($0) }) else {
            throw HEIFFile.Problem("iloc field sizes \(offsetSize)/\(lengthSize)/\(baseSize)/\(indexSize)")
        }
        let count = try b.uint(v < 2 ? 2 : 4)
        guard count <= Self.maxItems else { throw HEIFFile.Limit("its iloc locates \(count) items; at most \(Self.maxItems) are read") }
        for _ in 0..<count {
            guard b.left > 0 else { throw HEIFFile.Problem("iloc is truncated") }
            let id = try b.uint(v < 2 ? 2 : 4)
            let method = v >= 1 ? try b.u16() & 15 : 0
            try b.skip(2)  // data reference index: this file
            let base = try b.uint(baseSize)
            let extents = try b.u16()
            guard extents <= Self.maxExtents else { throw HEIFFile.Limit("item \(id) is in \(extents) extents; at most \(Self.maxExtents) are read") }
            var ranges: [Range<Int>] = [], total = 0
            for _ in 0..<extents {
                try b.skip(indexSize)
                let (offset, overflow) = base.addingReportingOverflow(try b.uint(offsetSize))
                let length = try b.uint(lengthSize)
                // Method 2's lengths count into other items; the rest must fit in the file, together.
                if method != 2 {
                    total = total.addingReportingOverflow(length).partialValue
                    guard total >= 0, total <= bytes.count else {
                        throw HEIFFile.Limit("item \(id)'s extents add up to more bytes than the file has (\(bytes.count))")
                    }
                }
                guard !overflow, length > 0 else { throw HEIFFile.Problem("item \(id) has an extent of length 0 or past 2^63") }
                switch method {
                case 0: ranges.append(try b.range(offset, length))
                case 1:
                    guard let idat else { throw HEIFFile.Problem("item \(id) is in idat, and there is none") }
                    let r = try b.range(idat.lowerBound.addingReportingOverflow(offset).partialValue, length)
                    guard offset <= idat.count, r.upperBound <= idat.upperBound else { throw HEIFFile.Problem("item \(id) is outside idat") }
                    ranges.append(r)
                default: elsewhere[id] = method
                }
            }
            if elsewhere[id] == nil { locations[id] = ranges }
        }
    }

    func references(_ type: String) -> [Reference] { refs.filter { $0.type == type } }

    func data(of id: Int) throws -> [Range<Int>] {
        if let method = elsewhere[id] { throw HEIFFile.Problem("item \(id) uses construction method \(method)") }
        guard let r = locations[id], !r.isEmpty else { throw HEIFFile.Problem("item \(id) has no data in iloc") }
        return r
    }

    /// The item's properties, parsed, in `ipma` order.
    func properties(of id: Int) throws -> [Property] {
        try (associations[id] ?? []).compactMap { index in
            guard index > 0 else { return nil }
            guard index <= propertyBoxes.count else { throw HEIFFile.Problem("item \(id) names property \(index) of \(propertyBoxes.count)") }
            return try Property(propertyBoxes[index - 1])
        }
    }
}
