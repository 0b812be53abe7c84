/// The resampler's inner loops, written for what x86-64's baseline (SSE2, no FMA) and
/// Swift 6.3's code generation do well; each choice was measured (callgrind, wall time).
extension Resampler {
    /// Rounds to nearest and clamps to a byte. Adding 1.5 * 2^23 puts round-to-nearest(v) in
    /// the low mantissa bits (|v| < 2^22): no trapping float-to-integer conversion, and the
    /// integer clamp vectorises to SSE2's saturating packs (a float clamp did not).
    @inline(__always) static func byte(_ v: Float) -> UInt8 {
        let i = Int32(bitPattern: (v + 12_582_912).bitPattern) &- 0x4B40_0000
        return UInt8(truncatingIfNeeded: min(max(i, 0), 255))
    }

    /// One input row to floats. `SIMD16<Float>(SIMD16<UInt8>)` is a specialised (not generic)
    /// call in Swift 6.3, and cheaper than the 8-wide loop LLVM vectorises.
    static func floats(_ from: UnsafePointer<UInt8>, count: Int, into to: UnsafeMutablePointer<Float>) {
        var x = 0
        while x &+ 16 <= count {
            let v = SIMD16<Float>(UnsafeRawPointer(from + x).loadUnaligned(as: SIMD16<UInt8>.self))
            UnsafeMutableRawPointer(to + x).storeBytes(of: v, as: SIMD16<Float>.self)
            x &+= 16
        }
        while x < count { to[x] = Float(from[x]); x += 1 }
    }

    /// `line` = the weighted sum of the `count` rows in `rows`. All taps of a 32-float chunk
    /// are summed in 8 registers, then stored once; the usual counts are fully unrolled.
    static func vertical(_ rows: UnsafePointer<UnsafePointer<Float>>, count: Int, weights: UnsafePointer<Float>,
                         stride: Int, into line: UnsafeMutablePointer<Float>) {
        switch count {
        case 4: sumRows(rows, 4, weights, stride, line)
        case 5: sumRows(rows, 5, weights, stride, line)
        case 6: sumRows(rows, 6, weights, stride, line)
        case let n: sumRows(rows, n, weights, stride, line)
        }
    }

    @inline(__always) static func sumRows(_ rows: UnsafePointer<UnsafePointer<Float>>, _ n: Int, _ weights: UnsafePointer<Float>,
                                          _ stride: Int, _ line: UnsafeMutablePointer<Float>) {
        for x in Swift.stride(from: 0, to: stride, by: 32) {
            var p = UnsafeRawPointer(rows[0] + x)
            var a = p.load(as: SIMD16<Float>.self) * weights[0], b = p.load(fromByteOffset: 64, as: SIMD16<Float>.self) * weights[0]
            for k in 1..<n {
                p = UnsafeRawPointer(rows[k] + x)
                a += p.load(as: SIMD16<Float>.self) * weights[k]
                b += p.load(fromByteOffset: 64, as: SIMD16<Float>.self) * weights[k]
            }
            UnsafeMutableRawPointer(line + x).storeBytes(of: a, as: SIMD16<Float>.self)
            UnsafeMutableRawPointer(line + x).storeBytes(of: b, toByteOffset: 64, as: SIMD16<Float>.self)
        }
    }

    /// 1 to 4 bands: a pixel is 4 float lanes (those past its bands are the next pixel's,
    /// overwritten when that pixel is stored). Every pixel takes `taps` taps, short ones padded
    /// with zero weights, splatted in `lanes`: one load per weight, no per-pixel count, and a
    /// fully unrolled pixel for the usual counts (with a variable count LLVM shuffled lanes).
    /// `offsets`: each pixel's first tap, in bytes from `line`.
    static func horizontal4Lanes(_ line: UnsafeMutablePointer<Float>, stride: Int, offsets: [Int32], taps: Int,
                                 lanes: UnsafePointer<SIMD4<Float>>, into out: UnsafeMutablePointer<Float>) {
        offsets.withUnsafeBufferPointer { s in
            let l = UnsafeRawPointer(line)
            switch taps {
            case 4: pixels4Lanes(l, stride, s, 4, lanes, out); case 5: pixels4Lanes(l, stride, s, 5, lanes, out)
            case 6: pixels4Lanes(l, stride, s, 6, lanes, out); case 7: pixels4Lanes(l, stride, s, 7, lanes, out)
            case 8: pixels4Lanes(l, stride, s, 8, lanes, out); case 9: pixels4Lanes(l, stride, s, 9, lanes, out)
            case 10: pixels4Lanes(l, stride, s, 10, lanes, out); case 11: pixels4Lanes(l, stride, s, 11, lanes, out)
            case 12: pixels4Lanes(l, stride, s, 12, lanes, out); case 13: pixels4Lanes(l, stride, s, 13, lanes, out)
            case 14: pixels4Lanes(l, stride, s, 14, lanes, out); case 15: pixels4Lanes(l, stride, s, 15, lanes, out)
            case 16: pixels4Lanes(l, stride, s, 16, lanes, out); case 20: pixels4Lanes(l, stride, s, 20, lanes, out)
            case 24: pixels4Lanes(l, stride, s, 24, lanes, out)
            case let n: pixels4Lanes(l, stride, s, n, lanes, out)
            }
        }
    }

    @inline(__always) static func pixels4Lanes(_ line: UnsafeRawPointer, _ stride: Int, _ offsets: UnsafeBufferPointer<Int32>,
                                               _ n: Int, _ lanes: UnsafePointer<SIMD4<Float>>, _ out: UnsafeMutablePointer<Float>) {
        let step = stride &* MemoryLayout<Float>.stride
        @inline(__always) func pixel(_ o: Int, _ w: UnsafePointer<SIMD4<Float>>) -> SIMD4<Float> {
            let p = line + Int(offsets[o])
            var acc = p.loadUnaligned(as: SIMD4<Float>.self) * w[0]
            for k in 1..<n { acc += p.loadUnaligned(fromByteOffset: k &* step, as: SIMD4<Float>.self) * w[k] }
            return acc
        }
        // Two pixels a step: two independent sums in flight, half the loop overhead (1.1x).
        var o = 0, w = lanes
        while o &+ 1 < offsets.count {
            let a = pixel(o, w), b = pixel(o &+ 1, w + n)
            UnsafeMutableRawPointer(out + o &* stride).storeBytes(of: a, as: SIMD4<Float>.self)
            UnsafeMutableRawPointer(out + (o &+ 1) &* stride).storeBytes(of: b, as: SIMD4<Float>.self)
            w += 2 &* n
            o &+= 2
        }
        if o < offsets.count { UnsafeMutableRawPointer(out + o &* stride).storeBytes(of: pixel(o, w), as: SIMD4<Float>.self) }
    }
}
