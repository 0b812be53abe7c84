/// The scale libjpeg-turbo decodes a JPEG at for compress: the smallest that still covers
/// the (stored-orientation) base, so the resampler only ever shrinks.
///
/// libjpeg-turbo's IDCT scales in eighths: 1/8, 1/4 and 1/2 have SIMD kernels; 3/8 is
/// scalar C but decodes 0.56x the pixels of 1/2 (a portrait 12 MP photo needs 1147x860
/// stored, which 1/4's 1008x756 is short of): measured on the bench's portraits, 3/8 plus
/// the smaller resample cost less CPU than 1/2 (docs/benchmarks.md, 2026-12-03).
/// libvips' jpegload (the path for JPEGs the direct decoder does not take, e.g. CMYK)
/// only shrinks by 1, 2, 4 or 8: `shrink` is its factor, never smaller than `eighths`'.
struct JPEGScale: Equatable {
    /// The decode is `eighths`/8 of the full size (1, 2, 3, 4 or 8).
    let eighths: Int
    /// libvips' shrink-on-load factor (8, 4, 2 or 1) that covers the same base.
    let shrink: Int

    static let full = JPEGScale(eighths: 8, shrink: 1)

    init(eighths: Int, shrink: Int) {
        self.eighths = eighths
        self.shrink = shrink
    }

    /// For a `width` x `height` JPEG whose base is `covering` in the stored orientation.
    init(width: Int, height: Int, covering base: (width: Int, height: Int)) {
        func covers(_ e: Int) -> Bool { Self.side(width, eighths: e) >= base.width && Self.side(height, eighths: e) >= base.height }
        eighths = [1, 2, 3, 4].first(where: covers) ?? 8
        shrink = [8, 4, 2].first { covers(8 / $0) } ?? 1
    }

    /// A side decoded at `eighths`/8: libjpeg rounds up.
    static func side(_ full: Int, eighths: Int) -> Int { (full * eighths + 7) / 8 }
}
