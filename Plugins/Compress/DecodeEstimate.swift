
import HEIF

/// What decoding a photo holds in memory at once, estimated from its header before any
/// pixel is decoded, to reserve from the daemon's `DecodeMemory`: the decoded pixels (1
/// byte a band, at least 3 bands; 2 for 16-bit images), a progressive JPEG's coefficient
/// buffer (libjpeg keeps every coefficient of the full-size image until the last scan: 2
/// bytes a band a pixel, as 4:4:4), a HEIC's whole-size decode by libheif before libvips
/// copies it (libvips' heifload), and the in-memory base the renditions are cut from (4 bands).
struct DecodeEstimate {
    static func bytes(width: Int, height: Int, bands: Int, wide: Bool, format: String, progressive: Bool, shrink: Int,
                      base: (Int, Int)) -> Int64 {
        let full = Int64(width) * Int64(height)
        let s = Int64(max(1, shrink))
        let decoded = ((Int64(width) + s - 1) / s) * ((Int64(height) + s - 1) / s)
        let perPixel = Int64(max(3, bands)) * (wide ? 2 : 1)
        var total = decoded * perPixel + Int64(base.0) * Int64(base.1) * 4
        if format == "jpeg" && progressive { total += full * Int64(max(1, bands)) * 2 }
        if format == "heic" || format == "avif" { total += full * perPixel }
        return total
    }

    /// Compress's own HEIF path (HEIFDecode): no full-size frame. One tile row of Y and CbCr
    /// (1.5 bytes a pixel), libavcodec's picture buffers (a tile, two pictures) and its
    /// per-block tables (about a tile again), the two resamplers' rings of float rows (as
    /// many rows as the vertical kernel spans: 4 x the shrink + 3), and at the base's size the
    /// shrunk planes, the RGB, its upright and sRGB copies and the base (3 + 3 x 3 + 4 bytes).
    /// In Doubles: a tile's sides may each be near 2^31 (HEIFFile allows it), whose products
    /// overflow Int64; such a size saturates, and is then more memory than any budget.
    static func heif(_ file: HEIFFile, base: (Int, Int)) -> Int64 {
        let width = Double(file.width), tile = Double(file.tileWidth) * Double(file.tileHeight)
        let rows = width * Double(file.tileHeight) * 3 / 2
        let decoder = tile * 3 / 2 * 3
        let shrink = Double(max(file.width, file.height) / max(1, min(base.0, base.1)) + 1)  // at most
        let rings = (4 * shrink + 3) * width * 4 * 2
        return saturated(rows + decoder + rings + Double(base.0) * Double(base.1) * 16)
    }

    /// Bytes as Int64, at most 2^62.
    static func saturated(_ bytes: Double) -> Int64 { bytes < 0x1p62 ? Int64(bytes) : 1 << 62 }
}
