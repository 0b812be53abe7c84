/// Separable Catmull-Rom resampling of 8-bit interleaved pixels, antialiased when
/// shrinking (the kernel widens by the shrink factor), in single-precision floats.
///
/// Why not `vips_resize`: libvips 8.14's horizontal reduce is scalar and took ~14% of the
/// stage's CPU (about 12 ms of a 12 MP photo's 88). Here, per output row, the vertical
/// pass sums whole input rows 16 bytes at a time into one float row, and the horizontal
/// pass takes each output pixel's taps from it, all bands at once; weights are computed
/// once per row and column.
///
///     input rows ──vertical (SIMD16)──▶ float row ──horizontal (SIMD4 per pixel)──▶ output row
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
    /// (`outWidth` x `outHeight`, packed). Rows stream through one float row, which stays
    /// in the L1 cache: no intermediate image.
    static func resample(_ src: UnsafePointer<UInt8>, width: Int, height: Int, bands: Int,
                         into dst: UnsafeMutablePointer<UInt8>, outWidth: Int, outHeight: Int) {
        let rows = Taps(input: height, output: outHeight), columns = Taps(input: width, output: outWidth)
        let rowBytes = width * bands, outRowBytes = outWidth * bands
        // Four floats of slack: a 3-band pixel is loaded and stored as 4 lanes.
        let line = UnsafeMutablePointer<Float>.allocate(capacity: rowBytes + 4)
        let outLine = UnsafeMutablePointer<Float>.allocate(capacity: outRowBytes + 4)
        defer { line.deallocate(); outLine.deallocate() }
        line.initialize(repeating: 0, count: rowBytes + 4)
        outLine.initialize(repeating: 0, count: outRowBytes + 4)
        for y in 0..<outHeight {
            vertical(src + Int(rows.start[y]) * rowBytes, rowBytes: rowBytes, weights: rows[y], into: line)
            switch bands {
            case 3: horizontal4Lanes(line, stride: 3, columns: columns, into: outLine)
            case 4: horizontal4Lanes(line, stride: 4, columns: columns, into: outLine)
            default: horizontal(line, bands: bands, columns: columns, into: outLine)
            }
            let out = dst + y * outRowBytes
            for x in 0..<outRowBytes { out[x] = byte(outLine[x]) }
        }
    }

    /// Rounds and clamps to a byte. Adding 2^23 puts round-to-nearest(v) in the low mantissa
    /// bits: it avoids the checked (trapping) float-to-integer conversion in the hot loop.
    @inline(__always) static func byte(_ v: Float) -> UInt8 {
        UInt8(truncatingIfNeeded: (min(max(v, 0), 255) + 8_388_608).bitPattern)
    }

    /// `line` = the weighted sum of `weights.count` input rows from `src`. Tap by tap over
    /// the whole row, so the compiler vectorises the inner loop (SIMD types' integer-to-float
    /// conversions are generic calls in Swift 6.3).
    static func vertical(_ src: UnsafePointer<UInt8>, rowBytes: Int, weights: ArraySlice<Float>, into line: UnsafeMutablePointer<Float>) {
        var row = src
        for (k, w) in weights.enumerated() {
            if k == 0 {
                for x in 0..<rowBytes { line[x] = w * Float(row[x]) }
            } else {
                for x in 0..<rowBytes { line[x] += w * Float(row[x]) }
            }
            row += rowBytes
        }
    }

    /// RGB or RGBA: a pixel is 4 float lanes (for RGB the fourth is the next pixel's red,
    /// overwritten when that pixel is stored).
    static func horizontal4Lanes(_ line: UnsafeMutablePointer<Float>, stride: Int, columns: Taps, into out: UnsafeMutablePointer<Float>) {
        let step = stride * MemoryLayout<Float>.stride
        columns.weights.withUnsafeBufferPointer { weights in
            for o in 0..<columns.outputs {
                var acc = SIMD4<Float>(repeating: 0)
                var p = UnsafeRawPointer(line + Int(columns.start[o]) * stride)
                let w = weights.baseAddress! + o * columns.width
                for k in 0..<Int(columns.lengths[o]) {
                    acc += p.loadUnaligned(as: SIMD4<Float>.self) * w[k]
                    p += step
                }
                UnsafeMutableRawPointer(out + o * stride).storeBytes(of: acc, as: SIMD4<Float>.self)
            }
        }
    }

    static func horizontal(_ line: UnsafeMutablePointer<Float>, bands: Int, columns: Taps, into out: UnsafeMutablePointer<Float>) {
        for o in 0..<columns.outputs {
            let first = Int(columns.start[o])
            for b in 0..<bands {
                var acc: Float = 0
                for (k, w) in columns[o].enumerated() { acc += line[(first + k) * bands + b] * w }
                out[o * bands + b] = acc
            }
        }
    }
}
