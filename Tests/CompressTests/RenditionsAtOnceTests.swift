import Foundation
import TestSupport
import Testing
@testable import CompressStage

/// A lone photo's renditions are made at once (`Concurrently`), each reading the shared
/// base: the same bytes, sizes and order as one at a time.
@Suite struct RenditionsAtOnceTests {
    @Test(arguments: ["orientation_landscape_6.jpg", "orientation_portrait_1.jpg", "Canon_40D.jpg"])
    func atOnceIsOneAtATimesBytes(_ name: String) throws {
        let c = try Compressor(["renditions": [
            ["name": "display", "width": 860, "format": "jpeg", "quality": 90],
            ["name": "thumbnail", "fill": [200, 200], "format": "jpeg", "quality": 70],
            ["name": "small", "width": 120, "format": "webp", "quality": 60],
            ["name": "square", "fill": [64, 64], "format": "jpeg", "quality": 95],
        ]])
        let photo = try load(testPhotos.appendingPathComponent(name).path)
        let together = try c.stage.make(photo, atOnce: true).1, alone = try c.stage.make(photo, atOnce: false).1
        let names: [String] = together.map { $0.0.name }
        #expect(names == ["display", "thumbnail", "small", "square"])
        #expect(names == alone.map { $0.0.name })
        for (a, b) in zip(together, alone) {
            let same: Bool = a.1 == b.1 && a.2 == b.2 && a.3 == b.3
            #expect(same, "\(name) \(a.0.name): \(a.1.count) against \(b.1.count) bytes")
        }
    }
}
