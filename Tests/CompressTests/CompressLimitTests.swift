import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing
@testable import CompressStage

/// Hostile photos that once trapped or decoded the wrong bytes: each is now a clear
/// permanent failure, or the right photo.
@Suite struct CompressLimitTests {
    @Test func aOneByThreeMillionPNGIsRefusedByNameNotTrapped() throws {
        // Within validate's limits (3 MP), but the 860-wide display would be 860 x 2.58e9.
        let c = try Compressor()
        let png = c.home + "/needle.png"
        try makePNG(png, mode: "grey", width: 1, height: 3_000_000)
        #expect(c.run(png) == .fail(reason:
            "rendition \"display\" would be 860x2580000000 = 2218800000000 pixels, over compress max_pixels (100000000)"))
        // A fill is checked before its centre crop too: 200 x 600,000,000 would be resampled first.
        let thumbs = try Compressor(["renditions": [["name": "thumbnail", "fill": [200, 200]]]])
        #expect(thumbs.run(png) == .fail(reason:
            "rendition \"thumbnail\" (before its centre crop) would be 200x600000000 = 120000000000 pixels, over compress max_pixels (100000000)"))
    }

    @Test func maxPixelsIsAnOptionAndCountsTheSourceToo() throws {
        let photo = testPhotos.appendingPathComponent("Canon_40D.jpg").path  // 100 x 68
        #expect(try Compressor(["max_pixels": 6_000]).run(photo) == .fail(reason:
            "the photo would be 100x68 = 6800 pixels, over compress max_pixels (6000)"))
        #expect(throws: PhotomemoError.self) { try Compressor(["max_pixels": 0]) }
    }

    @Test func planArithmeticSaturatesInsteadOfTrapping() throws {
        // A 16384-wide enlargement of a 1 x 2^50 source: the height saturates at 2^50 and
        // the pixel count overflows 64 bits, reported as such, with no limit to speak of.
        let wide = Rendition(name: "w", size: .width(16384))
        #expect(throws: PhotomemoError(.badImage, "rendition \"w\" would be 16384x1125899906842624 = more than 2^63 pixels, over compress max_pixels (9223372036854775807)")) {
            try RenditionPlan([wide], width: 1, height: 1 << 50, maxPixels: .max)
        }
        #expect(Rendition.side(.infinity) == 1 << 50 && Rendition.side(.nan) == 1 << 50 && Rendition.side(-5) == 1)
        let plan = try RenditionPlan([wide], width: 4032, height: 3024, maxPixels: 300_000_000)
        #expect(plan.steps[0].output.width == 16384 && plan.steps[0].output.height == 12288)
        #expect(plan.base.width == 4032 && plan.base.height == 3024)  // the base is never enlarged
    }

    @Test func bracketsInAFileNameAreAName() throws {
        // libvips reads "t.jpg[]" as t.jpg with (no) options when given the name: the
        // record would get t.jpg's pictures. Decoded from memory, each is itself.
        let c = try Compressor(["renditions": [["name": "display", "width": 50]]])
        let real = c.home + "/t.jpg", odd = c.home + "/t.jpg[]", paged = c.home + "/t.jpg[n=-1]"
        try FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent("Canon_40D.jpg").path, toPath: real)
        for p in [odd, paged] {
            try FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent("orientation_landscape_1.jpg").path, toPath: p)
        }
        guard case .continue(let r) = c.run(real, key: "real") else { Issue.record("t.jpg failed"); return }
        #expect(r["original"]?["width"] == 100 && r["original"]?["height"] == 68)
        for p in [odd, paged] {
            guard case .continue(let o) = c.run(p, key: p) else { Issue.record("\(p) failed"); continue }
            #expect(o["original"]?["width"] == 600 && o["original"]?["height"] == 450, "\(p)")
        }
    }

    @Test func bytesThatDifferFromWhatIntakeHashedAreRefused() throws {
        let c = try Compressor()
        let path = c.home + "/swapped.jpg"
        try FileManager.default.copyItem(atPath: testPhotos.appendingPathComponent("Canon_40D.jpg").path, toPath: path)
        let taken = try SHA256.hexOfFile(atPath: path).hex
        try Data(try testPhoto("Nikon_D70.jpg")).write(to: URL(fileURLWithPath: path))
        guard case .fail(let reason) = c.run(path, sha256: taken) else { Issue.record("a changed photo was decoded"); return }
        #expect(reason.hasPrefix("photo changed after it was taken"))
        #expect(c.run(c.home + "/gone.jpg", sha256: taken) == .fail(reason: "photo file is gone: \(c.home)/gone.jpg"))
    }
}
