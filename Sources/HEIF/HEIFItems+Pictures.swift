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
    /// item's stream must code pictures no larger than its `ispe` (past the coding's
    /// rounding to 64), and a grid's tiles may reach past its output by less than a tile,
    /// so decoding it costs about its own pixels (validate's `max_pixels`) however its
    /// references repeat. Either is a `Limit`: no decoder sees the file.
    func checkPictureSizes() throws {
        func rounded(_ side: Int) -> Int { side > Int(Int32.max) ? side : (side + 63) & ~63 }
        for (id, type) in types where type == "hvc1" {
            guard let props = try? properties(of: id), let ispe = props.lazy.compactMap(\.size).first,
                  let coded = props.lazy.compactMap(\.hevc).first?.codedSize else { continue }
            guard coded.width <= rounded(ispe.0), coded.height <= rounded(ispe.1) else {
                throw HEIFFile.Limit("item \(id)'s HEVC stream codes \(coded.width)x\(coded.height) pictures, larger than its ispe (\(ispe.0)x\(ispe.1))")
            }
        }
        guard types[primary] == "grid", let grid = try? grid(primary), let first = grid.tiles.first,
              let tile = try? properties(of: first).lazy.compactMap(\.size).first else { return }
        // At most 256 columns or rows of tiles under 2^32 each side: no overflow.
        guard (grid.columns - 1) * tile.0 < grid.width, (grid.rows - 1) * tile.1 < grid.height else {
            throw HEIFFile.Limit("its grid of \(grid.columns)x\(grid.rows) tiles of \(tile.0)x\(tile.1) reaches past its \(grid.width)x\(grid.height) image by more than a tile")
        }
    }
}
