import Foundation
import TestSupport
import Testing
@testable import CompressStage

/// Compress decodes a JPEG at the smallest libjpeg-turbo scale that covers its base: a
/// portrait 12 MP photo at 3/8 (1512x1134 for a stored base of 1147x860), not 1/2 (0.56x
/// the pixels); its renditions keep their sizes and pixels.
@Suite struct JPEGScaleTests {
    @Test func scaleIsTheSmallestThatCoversTheBase() {
        // 12 MP: the landscape base 860x645 at 1/4, the portrait one (stored 1147x860) at 3/8.
        #expect(JPEGScale(width: 4032, height: 3024, covering: (860, 645)) == JPEGScale(eighths: 2, shrink: 4))
        #expect(JPEGScale(width: 4032, height: 3024, covering: (1147, 860)) == JPEGScale(eighths: 3, shrink: 2))
        // 48 MP: 1/8 landscape, 1/4 portrait (no eighth between them covers); a small photo whole.
        #expect(JPEGScale(width: 8064, height: 6048, covering: (860, 645)) == JPEGScale(eighths: 1, shrink: 8))
        #expect(JPEGScale(width: 8064, height: 6048, covering: (1147, 860)) == JPEGScale(eighths: 2, shrink: 4))
        #expect(JPEGScale(width: 600, height: 400, covering: (860, 573)) == .full)
    }

    @Test func portraitRenditionsAtThreeEighthsMatchOneHalfs() throws {
        let c = try Compressor()
        defer { try? FileManager.default.removeItem(atPath: c.home) }
        let path = c.home + "/portrait.jpg"
        try SyntheticPhoto.write(to: path, width: 4032, height: 3024, orientation: 6, seed: 5, quality: 92)
        let photo = try load(path)
        let chosen = try c.stage.make(photo).1, half = try c.stage.make(photo, jpegScale: JPEGScale(eighths: 4, shrink: 2)).1
        #expect(chosen.map { "\($0.0.name) \($0.2)x\($0.3)" } == ["display 860x1147", "thumbnail 200x200"])
        #expect(half.map { "\($0.0.name) \($0.2)x\($0.3)" } == chosen.map { "\($0.0.name) \($0.2)x\($0.3)" })
        for (a, b) in zip(chosen, half) {
            let pa = c.home + "/a-" + a.0.name + ".jpg", pb = c.home + "/b-" + b.0.name + ".jpg"
            try a.1.write(to: URL(fileURLWithPath: pa))
            try b.1.write(to: URL(fileURLWithPath: pb))
            let d = try meanDifference(pa, pb)
            #expect(d < 1.5, "\(a.0.name): mean difference \(d) between the 3/8 and 1/2 decodes")
            // Not the same bytes: the 3/8 decode did run.
            #expect(a.1 != b.1)
        }
    }
}
