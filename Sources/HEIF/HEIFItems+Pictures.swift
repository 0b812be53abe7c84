extension Items {
    /// A `grid` item's layout (its description in `idat` or the file) and its tiles, row by row.
    func grid(_ id: Int) throws -> (rows: Int, columns: Int, width: Int, height: Int, tiles: [Int]) {
        guard let dimg = references("dimg").first(where: { $0.from == id }) else { throw HEIFFile.Problem("grid has no dimg reference") }
        let data = try data(of: id)
        guard data.count == 1 else { throw HEIFFile.Problem("grid description in \(data.count) extents") }
        var r = BoxReader(bytes, from: data[0].lowerBound, to: data[0].upperBound)
        _ = try r.u8()
        let wide = try r.u8() & 1 == 1
        let rows = try r.u8() + 1, columns = try r.u8() + 1
        let width = try r.uint(wide ? 4 : 2), height = try r.uint(wide ? 4 : 2)
        guard dimg.to.count == rows * columns else { throw HEIFFile.Problem("grid of \(columns)x\(rows) has \(dimg.to.count) tiles") }
        return (rows, columns, width, height, dimg.to)
    }

    /// The work a decoder does is what the streams code, not what `ispe` says: every HEVC
    /// or AV1 item must declare its size (`ispe`), and no parameter set of it (in `hvcC` or
    /// `av1C`, or in its own data, which a decoder takes too; every one, since a decoder
    /// keeps the last) may code pictures larger than that, past the coding's rounding to
    /// 64. A grid may reference at most `maxItems` tiles, and its tiles may reach past its
    /// output by less than a tile, so decoding it costs about its own pixels (validate's
    /// `max_pixels`) however its references repeat. Anything else is a `Limit`: no decoder
    /// sees the file (two reviews' findings: a 64x64 `ispe` over an 8192x4096 stream, 256
    /// references to it, took minutes and 2 GB in libavcodec, libde265 or dav1d).
    func checkPictureSizes() throws {
        func rounded(_ side: Int) -> Int { side > Int(Int32.max) ? side : (side + 63) & ~63 }
        var declared: [Int: (Int, Int)] = [:]
        for (id, type) in types where type == "hvc1" || type == "av01" {
            let props: [Property]
            do { props = try properties(of: id) } catch let e as HEIFFile.Problem {
                throw HEIFFile.Limit("item \(id)'s properties cannot be read (\(e.description))")
            }
            guard let ispe = props.lazy.compactMap(\.size).first else { throw HEIFFile.Limit("item \(id) (\(type)) declares no size (ispe)") }
            declared[id] = ispe
            var coded: [(width: Int, height: Int)] = []
            // The item's bytes as one buffer: read in place when in one extent (every photo's are).
            func inItem(_ read: (UnsafeRawBufferPointer) -> [(width: Int, height: Int)]) -> [(width: Int, height: Int)] {
                guard let ranges = try? data(of: id) else { return [] }
                if ranges.count == 1 { return read(UnsafeRawBufferPointer(rebasing: bytes[ranges[0]])) }
                return ranges.flatMap { Array(bytes[$0]) }.withUnsafeBytes(read)
            }
            if type == "hvc1" {
                guard let config = props.lazy.compactMap(\.hevc).first else { continue }
                coded += config.codedSize.map { [($0.width, $0.height)] } ?? []
                coded += inItem { HEVCPictureSize.inBand($0, lengthSize: config.lengthSize) }
            } else {
                for case .av1(let size?) in props { coded.append((size.width, size.height)) }
                coded += inItem { AV1PictureSize.inBand($0) }
            }
            if let big = coded.first(where: { $0.width > rounded(ispe.0) || $0.height > rounded(ispe.1) }) {
                throw HEIFFile.Limit("item \(id)'s stream codes \(big.width)x\(big.height) pictures, larger than its ispe (\(ispe.0)x\(ispe.1))")
            }
        }
        // Derived images other than a grid (an `iovl` overlay, `iden`) draw on their inputs
        // whole: libheif decodes up to 16 inputs of any size (each within validate's
        // `max_pixels`) for a 64x64 overlay. Their inputs may add up to twice its own pixels.
        if let kind = types[primary], kind != "grid", let inputs = references("dimg").first(where: { $0.from == primary })?.to {
            guard let own = (try? properties(of: primary))?.lazy.compactMap(\.size).first else {
                throw HEIFFile.Limit("its \(kind) image declares no size (ispe)")
            }
            // Counted in saturating integers: an ispe of 2^32-1 each way is 2^64 pixels, past
            // Int.max (a Double's Int(drawn) trapped there, and took the daemon down).
            func saturated(_ r: (partialValue: Int, overflow: Bool)) -> Int { r.overflow ? .max : r.partialValue }
            var drawn = 0
            for input in inputs {
                guard let size = declared[input] ?? (try? properties(of: input))?.lazy.compactMap(\.size).first else {
                    throw HEIFFile.Limit("image \(input) under its \(kind) image declares no size (ispe)")
                }
                drawn = saturated(drawn.addingReportingOverflow(saturated(size.0.multipliedReportingOverflow(by: size.1))))
            }
            guard drawn <= saturated(saturated(own.0.multipliedReportingOverflow(by: own.1)).multipliedReportingOverflow(by: 2)) else {
                let count = drawn == .max ? "more than \(Int.max)" : "\(drawn)"
                throw HEIFFile.Limit("its \(kind) image of \(own.0)x\(own.1) draws on \(count) pixels of \(inputs.count) images, more than twice its own")
            }
            return
        }
        guard types[primary] == "grid", let grid = try? grid(primary) else { return }
        guard grid.tiles.count <= Self.maxItems else {
            throw HEIFFile.Limit("its grid references \(grid.tiles.count) tiles; at most \(Self.maxItems) are decoded")
        }
        let sizes = try grid.tiles.map { tile in
            guard let size = declared[tile] ?? (try? properties(of: tile))?.lazy.compactMap(\.size).first else {
                throw HEIFFile.Limit("tile \(tile) of its grid declares no size (ispe)")
            }
            return size
        }
        let tile = (sizes.map(\.0).max() ?? 0, sizes.map(\.1).max() ?? 0)
        // At most 256 columns or rows of tiles under 2^32 each side: no overflow.
        guard (grid.columns - 1) * tile.0 < grid.width, (grid.rows - 1) * tile.1 < grid.height else {
            throw HEIFFile.Limit("its grid of \(grid.columns)x\(grid.rows) tiles of \(tile.0)x\(tile.1) reaches past its \(grid.width)x\(grid.height) image by more than a tile")
        }
    }
}
