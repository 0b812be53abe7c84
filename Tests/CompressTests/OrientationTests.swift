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
