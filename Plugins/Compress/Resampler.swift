/// Separable Catmull-Rom resampling of 8-bit interleaved pixels, antialiased when
/// shrinking (the kernel widens by the shrink factor), in single-precision floats.
///
/// Why not `vips_resize`: libvips 8.14's horizontal reduce is scalar and took ~14% of the
/// stage's CPU. Here each input row is converted to floats once, into a ring of the rows
/// still needed; per output row the vertical pass sums its rows 32 floats at a time in
/// registers, and the horizontal pass sums each output pixel's taps, all bands at once
/// (the passes are in ResamplerPasses.swift).
///
///     input rows ──u8→float──▶ ring ──vertical──▶ float row ──horizontal (SIMD4 per pixel)──▶ output row
enum Resampler {
    /// For each output position: the first input index and its weights (summing to 1).
    struct Taps {
        var start: [Int32] = []
        var lengths: [Int32] = []
        var weights: [Float] = []  // `width` per output position, zero-padded
        var width = 0

        init(input: Int, output: Int) {
            let scale = Double(input) / Double(output)
            let stretch = max(scale, 1)  // antialiasing: the kernel widens when shrinking
            let support = 2 * stretch    // Catmull-Rom reaches 2
            width = Int((support * 2).rounded(.up)) + 1
            weights = [Float](repeating: 0, count: width * output)
            for o in 0..<output {
                let centre = (Double(o) + 0.5) * scale
                var first = max(0, Int((centre - support).rounded(.down)))
                var raw = (first...min(input - 1, Int((centre + support).rounded(.up)))).map {
                    Resampler.kernel((Double($0) + 0.5 - centre) / stretch)
                }
                // Zero taps at the ends (exact positions when not resampling) cost time only.
                while raw.count > 1, raw.last == 0 { raw.removeLast() }
                while raw.count > 1, raw.first == 0 { raw.removeFirst(); first += 1 }
                let total = raw.reduce(0, +)
                start.append(Int32(first))
                lengths.append(Int32(raw.count))
                for (k, w) in raw.enumerated() { weights[o * width + k] = Float(w / total) }
            }
        }

        var outputs: Int { start.count }

        /// Rows the ring holds: a window may end before the previous one did (trimming), and
        /// rows up to the latest end are converted already.
        var span: Int {
            var end = 0, span = 1
            for o in 0..<outputs { end = max(end, Int(start[o] + lengths[o])); span = max(span, end - Int(start[o])) }
            return span
        }

        /// Taps every pixel takes in `horizontal4Lanes`: the longest, above 16 rounded up to a
        /// multiple of 4 (fewer unrolled variants).
        var padded: Int {
            let n = Int(lengths.max() ?? 1)
            return n <= 16 ? n : (n + 3) & ~3
        }

        /// `padded` weights per output (zero past its length), each splatted to 4 lanes.
        var lanes: [SIMD4<Float>] {
            let n = padded
            return (0..<(outputs * n)).map { i in
                let o = i / n, k = i % n
                return SIMD4(repeating: k < Int(lengths[o]) ? weights[o * width + k] : 0)
            }
        }

        subscript(_ o: Int) -> ArraySlice<Float> { weights[(o * width)..<(o * width + Int(lengths[o]))] }
    }

    /// Catmull-Rom (cubic B=0, C=0.5), libvips' and Pillow's "bicubic".
    static func kernel(_ x: Double) -> Double {
        let a = abs(x)
        if a < 1 { return 1.5 * a * a * a - 2.5 * a * a + 1 }
        if a < 2 { return -0.5 * a * a * a + 2.5 * a * a - 4 * a + 2 }
        return 0
    }

    /// Resamples `src` (`width` x `height`, `bands` bytes per pixel, rows packed) into `dst`
    /// (`outWidth` x `outHeight`, packed), turned upright for EXIF `orientation` on the way
    /// out (then `dst` is `Orientation.uprightSize` of the output). No intermediate image:
    /// the ring is a few rows.
    static func resample(_ src: UnsafePointer<UInt8>, width: Int, height: Int, bands: Int,
                         into dst: UnsafeMutablePointer<UInt8>, outWidth: Int, outHeight: Int, orientation: Int = 1) {
        let stream = Stream(width: width, height: height, bands: bands, into: dst, outWidth: outWidth, outHeight: outHeight,
                            orientation: orientation)
        for y in 0..<height { stream.push(src + y * width * bands) }
    }
}
