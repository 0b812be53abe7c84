import HEIF

/// Compress's own HEIC decode, at the tile-decode floor: one libavcodec HEVC decoder for all the
/// grid's tiles (HEVCDecoder), each tile row's Y and CbCr planes shrunk straight into the
/// base's size by two `Resampler.Stream`s (never a full-size frame), then YCbCr→RGB and
/// the HEIF transforms at the base's size. The ICC profile is applied after, by the stage,
/// as on the libvips path. libvips' heifload instead has libheif decode each tile with a
/// new decoder and thread, convert and rotate at full size, then copy (~5 full-size passes).
///
/// Handled: a `grid` of `hvc1` tiles or a single `hvc1` item, 8-bit 4:2:0, no alpha, no
/// clean aperture, even tile sizes, matrix BT.601/709/2020 (or none: BT.601, full range).
/// Anything else — and any file HEIFFile cannot read or libavcodec reports damage in — goes
/// to libvips' heifload (`Plan.init` returns nil; `decode` throws), as every HEIC did before.
struct HEIFDecode {
    let file: HEIFFile
    /// The EXIF orientation (1...8) equal to the file's irot/imir, applied by `Orientation`.
    let orientation: Int
    let kr: Float, kb: Float, fullRange: Bool

    /// nil: a file this path does not handle (see above); libvips decodes it.
    init?(_ bytes: UnsafeRawBufferPointer) {
        guard let f = try? HEIFFile.parse(bytes), f.hevc.chromaFormat == 1, f.hevc.bitDepthLuma == 8, f.hevc.bitDepthChroma == 8,
              !f.hasAlpha, !f.cleanAperture, f.tileWidth % 2 == 0, f.tileHeight % 2 == 0 else { return nil }
        // Kr, Kb of ISO/IEC 23091-2's matrix coefficients; libheif's default without nclx is BT.601, full range.
        switch f.colour.matrix ?? 6 {
        case 1: (kr, kb) = (0.2126, 0.0722)
        case 5, 6: (kr, kb) = (0.299, 0.114)
        case 9: (kr, kb) = (0.2627, 0.0593)
        default: return nil
        }
        file = f
        fullRange = f.colour.fullRange ?? true
        orientation = Self.orientation(f.transforms)
    }

    /// Bytes this decode holds at once (for DecodeMemory): a tile row of Y and CbCr, the
    /// resamplers' rings (float rows), the shrunk planes and the RGB, at `w` x `h`.
    func memory(width w: Int, height h: Int) -> Int64 {
        let row = Double(file.width) * Double(file.tileHeight) * 3 / 2
        let rings = Double(file.width) * 4 * 2 * Double(max(8, 4 * (file.height / max(1, h)) + 8))
        return DecodeEstimate.saturated(row + rings + Double(w) * Double(h) * 6 + Double(file.tileWidth) * Double(file.tileHeight) * 3)
    }

    /// The photo decoded and shrunk to `w` x `h` (as stored, before the transforms), as
    /// packed RGB into `rgb` (`w * h * 3` bytes).
    func decode(_ bytes: UnsafeRawBufferPointer, width w: Int, height h: Int, into rgb: UnsafeMutablePointer<UInt8>) throws {
        let (width, height, tw, th) = (file.width, file.height, file.tileWidth, file.tileHeight)
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        let luma = UnsafeMutablePointer<UInt8>.allocate(capacity: w * h), chroma = UnsafeMutablePointer<UInt8>.allocate(capacity: w * h * 2)
        let yRows = UnsafeMutablePointer<UInt8>.allocate(capacity: width * th), cRows = UnsafeMutablePointer<UInt8>.allocate(capacity: cw * 2 * th / 2)
        defer { luma.deallocate(); chroma.deallocate(); yRows.deallocate(); cRows.deallocate() }
        let yStream = Resampler.Stream(width: width, height: height, bands: 1, into: luma, outWidth: w, outHeight: h)
        let cStream = Resampler.Stream(width: cw, height: ch, bands: 2, into: chroma, outWidth: w, outHeight: h)
        let decoder = try HEVCDecoder(file.hevc, tile: (file.tileWidth, file.tileHeight), bytes: bytes)
        for r in 0..<file.rows {
            let top = r * th, n = min(th, height - top), cn = min(th / 2, ch - top / 2)
            guard n > 0 else { break }  // a grid may have rows past the image
            for c in 0..<file.columns {
                let left = c * tw, m = min(tw, width - left), cm = min(tw / 2, cw - left / 2)
                guard m > 0 else { continue }
                try decoder.decode(file.tiles[r * file.columns + c]) { p in
                    guard p.width >= tw, p.height >= th else { throw HEVCDecoder.Failure(description: "tile is \(p.width)x\(p.height), not \(tw)x\(th)") }
                    for j in 0..<n { (yRows + j * width + left).update(from: p.y + j * p.yStride, count: m) }
                    for j in 0..<cn {
                        let out = cRows + (j * cw + left / 2) * 2, cb = p.cb + j * p.cStride, cr = p.cr + j * p.cStride
                        for i in 0..<cm { out[2 * i] = cb[i]; out[2 * i + 1] = cr[i] }
                    }
                }
            }
            for j in 0..<n { yStream.push(yRows + j * width) }
            for j in 0..<cn { cStream.push(cRows + j * cw * 2) }
        }
        guard yStream.written == h, cStream.written == h else { throw HEVCDecoder.Failure(description: "the grid does not cover the image") }
        toRGB(luma, chroma, count: w * h, into: rgb)
    }

    /// YCbCr→RGB (full or limited range) at the output size.
    func toRGB(_ y: UnsafePointer<UInt8>, _ c: UnsafePointer<UInt8>, count: Int, into rgb: UnsafeMutablePointer<UInt8>) {
        let kg = 1 - kr - kb
        let ys: Float = fullRange ? 1 : 255 / 219, yo: Float = fullRange ? 0 : 16, cs: Float = fullRange ? 1 : 255 / 224
        let crR = 2 * (1 - kr) * cs, cbB = 2 * (1 - kb) * cs
        let cbG = -2 * (1 - kb) * kb / kg * cs, crG = -2 * (1 - kr) * kr / kg * cs
        for i in 0..<count {
            let l = (Float(y[i]) - yo) * ys, cb = Float(c[2 * i]) - 128, cr = Float(c[2 * i + 1]) - 128
            rgb[3 * i] = Resampler.byte(l + crR * cr)
            rgb[3 * i + 1] = Resampler.byte(l + cbG * cb + crG * cr)
            rgb[3 * i + 2] = Resampler.byte(l + cbB * cb)
        }
    }

    /// HEIF transforms (applied in file order) as the one EXIF orientation doing the same:
    /// each is a 2x2 matrix on pixel coordinates (x right, y down), composed.
    static func orientation(_ transforms: [HEIFFile.Transform]) -> Int {
        typealias M = (Int, Int, Int, Int)
        func times(_ a: M, _ b: M) -> M { (a.0 * b.0 + a.1 * b.2, a.0 * b.1 + a.1 * b.3, a.2 * b.0 + a.3 * b.2, a.2 * b.1 + a.3 * b.3) }
        var m: M = (1, 0, 0, 1)
        for t in transforms {
            switch t {
            case .rotate(let q): for _ in 0..<q { m = times((0, 1, -1, 0), m) }  // 90° anticlockwise
            case .mirror(let topToBottom): m = times(topToBottom ? (1, 0, 0, -1) : (-1, 0, 0, 1), m)
            }
        }
        let exif: [M] = [(1, 0, 0, 1), (-1, 0, 0, 1), (-1, 0, 0, -1), (1, 0, 0, -1), (0, 1, 1, 0), (0, -1, 1, 0), (0, -1, -1, 0), (0, 1, -1, 0)]
        return (exif.firstIndex { $0 == m } ?? 0) + 1
    }
}
