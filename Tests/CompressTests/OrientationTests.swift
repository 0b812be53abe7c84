import Testing
@testable import CompressStage

/// `Orientation` against the EXIF definitions, written out pixel by pixel: where each
/// upright pixel (x, y) of a stored `w` x `h` image comes from.
@Suite struct OrientationTests {
    static func source(_ o: Int, x: Int, y: Int, w: Int, h: Int) -> (Int, Int) {
        switch o {
        case 2: (w - 1 - x, y)
        case 3: (w - 1 - x, h - 1 - y)
        case 4: (x, h - 1 - y)
        case 5: (y, x)
        case 6: (y, h - 1 - x)
        case 7: (w - 1 - y, h - 1 - x)
        case 8: (w - 1 - y, x)
        default: (x, y)
        }
    }

    @Test(arguments: 1...8)
    func everyPixelLandsWhereTheEXIFOrientationSays(_ o: Int) {
        for (w, h, bands) in [(5, 3, 3), (1, 4, 3), (4, 1, 4), (7, 6, 1)] {
            // Each pixel's bands hold its index and the band: all distinct.
            let src = (0..<(w * h * bands)).map { UInt8(truncatingIfNeeded: $0) }
            let (ow, oh) = Orientation.uprightSize(width: w, height: h, orientation: o)
            #expect((ow, oh) == ((5...8).contains(o) ? (h, w) : (w, h)))
            var dst = [UInt8](repeating: 0, count: src.count)
            Orientation.upright(src, width: w, height: h, bands: bands, orientation: o, into: &dst)
            var wrong = 0
            for y in 0..<oh {
                for x in 0..<ow {
                    let (sx, sy) = Self.source(o, x: x, y: y, w: w, h: h)
                    for b in 0..<bands where dst[(y * ow + x) * bands + b] != src[(sy * w + sx) * bands + b] { wrong += 1 }
                }
            }
            #expect(wrong == 0, "orientation \(o), \(w)x\(h)x\(bands)")
        }
    }
}

/// The resampler turning its output upright as it writes (`Resampler.resample(orientation:)`)
/// gives the same bytes as resampling, then `Orientation.upright`.
@Suite struct ResamplerOrientationTests {
    @Test(arguments: 1...8)
    func resamplingUprightIsResamplingThenTurning(_ o: Int) {
        for (w, h, ow, oh, bands) in [(13, 9, 7, 5, 3), (9, 13, 5, 7, 1), (8, 6, 8, 6, 4), (11, 7, 6, 4, 2), (40, 30, 3, 17, 3)] {
            let src = (0..<(w * h * bands)).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ $0 / 5) }
            let stored = resample(src, w, h, bands: bands, to: ow, oh)
            var expected = [UInt8](repeating: 0, count: stored.count)
            Orientation.upright(stored, width: ow, height: oh, bands: bands, orientation: o, into: &expected)
            var fused = [UInt8](repeating: 0, count: stored.count)
            src.withUnsafeBufferPointer { s in
                fused.withUnsafeMutableBufferPointer { d in
                    Resampler.resample(s.baseAddress!, width: w, height: h, bands: bands, into: d.baseAddress!, outWidth: ow, outHeight: oh,
                                       orientation: o)
                }
            }
            #expect(fused == expected, "orientation \(o), \(w)x\(h) → \(ow)x\(oh)x\(bands)")
        }
    }
}
