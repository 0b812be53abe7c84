import Testing
@testable import CompressStage

/// Runs the resampler on a byte array.
func resample(_ src: [UInt8], _ w: Int, _ h: Int, bands: Int, to ow: Int, _ oh: Int) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: ow * oh * bands)
    src.withUnsafeBufferPointer { s in
        out.withUnsafeMutableBufferPointer { d in
            Resampler.resample(s.baseAddress!, width: w, height: h, bands: bands, into: d.baseAddress!, outWidth: ow, outHeight: oh)
        }
    }
    return out
}

/// The same resampling written the obvious way, in doubles, straight from the kernel:
/// out(x, y) = Σ K(dx) K(dy) in(i, j) / Σ K(dx) K(dy), the kernel stretched when shrinking.
func directResample(_ src: [UInt8], _ w: Int, _ h: Int, bands: Int, to ow: Int, _ oh: Int) -> [Double] {
    func weights(_ n: Int, _ on: Int, _ o: Int) -> [(Int, Double)] {
        let scale = Double(n) / Double(on), stretch = max(scale, 1)
        let centre = (Double(o) + 0.5) * scale
        return (0..<n).map { ($0, Resampler.kernel((Double($0) + 0.5 - centre) / stretch)) }.filter { $0.1 != 0 }
    }
    let columns = (0..<ow).map { weights(w, ow, $0) }
    var out: [Double] = []
    for y in 0..<oh {
        let wy = weights(h, oh, y)
        for x in 0..<ow {
            let wx = columns[x]
            for b in 0..<bands {
                var sum = 0.0, total = 0.0
                for (j, ky) in wy {
                    for (i, kx) in wx {
                        sum += kx * ky * Double(src[(j * w + i) * bands + b])
                        total += kx * ky
                    }
                }
                out.append(min(max(sum / total, 0), 255))
            }
        }
    }
    return out
}

/// Catmull-Rom written out again here, so the reference below shares no code with the resampler.
func catmullRom(_ x: Double) -> Double {
    let a = abs(x)
    return a < 1 ? (1.5 * a - 2.5) * a * a + 1 : a < 2 ? ((-0.5 * a + 2.5) * a - 4) * a + 2 : 0
}

/// Separable reference in doubles: rows first, then columns, each axis normalised, clamped
/// to 0...255 but not rounded.
func referenceResample(_ src: [UInt8], _ w: Int, _ h: Int, bands: Int, to ow: Int, _ oh: Int) -> [Double] {
    func weights(_ n: Int, _ on: Int, _ o: Int) -> [(Int, Double)] {
        let scale = Double(n) / Double(on), stretch = max(scale, 1), centre = (Double(o) + 0.5) * scale
        let raw = (0..<n).map { ($0, catmullRom((Double($0) + 0.5 - centre) / stretch)) }
        let total = raw.reduce(0) { $0 + $1.1 }
        return raw.map { ($0.0, $0.1 / total) }
    }
    var mid = [Double](repeating: 0, count: w * oh * bands)
    for y in 0..<oh {
        for (j, k) in weights(h, oh, y) where k != 0 {
            for i in 0..<(w * bands) { mid[y * w * bands + i] += k * Double(src[j * w * bands + i]) }
        }
    }
    var out = [Double](repeating: 0, count: ow * oh * bands)
    for x in 0..<ow {
        let wx = weights(w, ow, x).filter { $0.1 != 0 }
        for y in 0..<oh {
            for b in 0..<bands {
                let v = wx.reduce(0) { $0 + $1.1 * mid[(y * w + $1.0) * bands + b] }
                out[(y * ow + x) * bands + b] = min(max(v, 0), 255)
            }
        }
    }
    return out
}

@Suite struct ResamplerTests {
    /// 1-pixel images, widths that are not multiples of 4, 16 or 32 floats, 1 to 4 bands,
    /// enlarging, shrinking, both at once, the same size, and the daemon's two calls.
    static let shapes: [(bands: Int, w: Int, h: Int, ow: Int, oh: Int)] = [
        (3, 1, 1, 1, 1), (3, 1, 1, 5, 3), (4, 7, 5, 1, 1), (1, 1, 9, 1, 4), (1, 9, 1, 3, 1),
        (3, 17, 13, 17, 13), (4, 33, 7, 33, 7), (1, 35, 11, 35, 11),
        (3, 37, 29, 101, 77), (4, 11, 3, 26, 9), (1, 5, 4, 31, 23), (2, 13, 9, 29, 17),
        (3, 403, 302, 131, 97), (4, 301, 203, 37, 25), (1, 257, 129, 61, 29), (2, 99, 71, 31, 23),
        (3, 45, 200, 170, 31), (4, 250, 20, 61, 50), (3, 1008, 756, 860, 645), (3, 860, 645, 267, 200),
    ]

    /// Within rounding (0.5, plus float error) of the exact value, so within ±1 of any other
    /// correctly rounded implementation, such as the one before this.
    @Test(arguments: shapes.indices)
    func staysWithinRoundingOfTheDoublePrecisionReference(_ i: Int) {
        let (bands, w, h, ow, oh) = Self.shapes[i]
        var rng = SystemRandomNumberGenerator()
        // Noise, with saturated pixels so that the overshoot is clamped at both ends.
        let src = (0..<(w * h * bands)).map { _ -> UInt8 in
            switch Int.random(in: 0..<8, using: &rng) {
            case 0: 0
            case 1: 255
            default: UInt8.random(in: 0...255, using: &rng)
            }
        }
        let fast = resample(src, w, h, bands: bands, to: ow, oh)
        let exact = referenceResample(src, w, h, bands: bands, to: ow, oh)
        let worst = zip(fast, exact).map { abs(Double($0) - $1) }.max()!
        #expect(worst <= 0.51, "\(bands) bands \(w)x\(h) -> \(ow)x\(oh): largest difference \(worst)")
    }

    @Test(arguments: [1, 3, 4])
    func aFlatImageStaysFlat(_ bands: Int) {
        let out = resample([UInt8](repeating: 77, count: 97 * 61 * bands), 97, 61, bands: bands, to: 40, 25)
        #expect(out.allSatisfy { $0 == 77 })
        let up = resample([UInt8](repeating: 200, count: 5 * 4 * bands), 5, 4, bands: bands, to: 17, 13)
        #expect(up.allSatisfy { $0 == 200 })
    }

    @Test func theSameSizeIsAnExactCopy() {
        let src = (0..<(33 * 21 * 3)).map { UInt8(truncatingIfNeeded: $0 &* 37) }
        #expect(resample(src, 33, 21, bands: 3, to: 33, 21) == src)
    }

    @Test(arguments: [(1, 403, 302, 344, 258), (3, 403, 302, 344, 258), (4, 300, 200, 97, 64), (2, 60, 45, 200, 150), (3, 172, 129, 54, 40)])
    func matchesTheDirectEvaluationWithinRounding(_ c: (Int, Int, Int, Int, Int)) {
        let (bands, w, h, ow, oh) = c
        var rng = SystemRandomNumberGenerator()
        // Noise plus a gradient: every tap matters and the values span the range.
        let src = (0..<(w * h * bands)).map { i -> UInt8 in
            let x = (i / bands) % w
            return UInt8(min(255, x * 200 / w + Int.random(in: 0...55, using: &rng)))
        }
        let fast = resample(src, w, h, bands: bands, to: ow, oh)
        let exact = directResample(src, w, h, bands: bands, to: ow, oh)
        let worst = zip(fast, exact).map { abs(Double($0) - $1) }.max()!
        #expect(worst <= 0.51, "largest difference \(worst)")
    }

    @Test func shrinkingAveragesInsteadOfAliasing() {
        // One-pixel black/white columns, shrunk 3.3x: an antialiased result is mid grey
        // everywhere; point sampling would give stripes of 0 and 255.
        let w = 330, h = 20
        let src = (0..<(w * h)).map { UInt8(($0 % w) % 2 == 0 ? 0 : 255) }
        let out = resample(src, w, h, bands: 1, to: 100, 6)
        #expect(out.allSatisfy { (110...145).contains($0) }, "\(out.min()!)...\(out.max()!)")
    }

    @Test func aRampStaysARamp() {
        // The cubic reproduces linear ramps exactly away from the edges: output x samples
        // input position 4x + 1.5.
        let src = (0..<(256 * 8)).map { UInt8($0 % 256) }
        let out = resample(src, 256, 8, bands: 1, to: 64, 2)
        for x in 2..<62 {
            #expect(abs(Double(out[x]) - (4 * Double(x) + 1.5)) <= 0.51, "x \(x): \(out[x])")
        }
    }
}
