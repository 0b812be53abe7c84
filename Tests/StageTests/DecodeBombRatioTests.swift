import Foundation
import TestSupport
import Testing
@testable import ValidateStage

/// Memory follows the pixels a header claims, not the file's size: a few KB that claim
/// 100 MP are refused before anything decodes them, as a zip bomb would be.
extension ValidateStageTests {
    /// A WebP header claiming `width` x `height`, padded to `bytes`.
    func webp(_ width: Int, _ height: Int, bytes: Int) -> [UInt8] {
        let head = Synthetic.webpVP8X(width: width, height: height)
        return head + [UInt8](repeating: 0, count: max(0, bytes - head.count))
    }

    @Test func fourKilobytesClaimingAHundredMegapixelsIsABomb() throws {
        #expect(try run(stage(), bytes: webp(10_000, 10_000, bytes: 4096)) == .fail(reason:
            "image claims 10000x10000 = 100000000 pixels from 4096 bytes, 24414 pixels a byte, over max_pixels_per_byte (4000): a possible decompression bomb"))
        // The option moves the line.
        guard case .continue = try run(stage(["max_pixels_per_byte": 100_000]), bytes: webp(10_000, 10_000, bytes: 4096)) else {
            Issue.record("refused past a raised max_pixels_per_byte"); return
        }
    }

    @Test func smallImagesAndRealPhotosAreNotAskedARatio() throws {
        // 4 MP claimed by 30 bytes: under the floor, whatever the ratio.
        guard case .continue = try run(stage(), bytes: webp(2000, 2000, bytes: 0)) else { Issue.record("a 4 MP header refused"); return }
        for name in ["orientation_landscape_1.jpg", "IMG_5195.HEIC", "Canon_40D.jpg"] {
            guard case .continue = try run(stage(), bytes: try photo(name)) else { Issue.record("\(name) refused"); continue }
        }
    }
}
