import Foundation
import PhotomemoCore
import TestSupport
import Testing
@testable import ValidateStage

/// Memory follows the pixels a header claims, not the file's size: a few KB that claim
/// 100 MP are refused before anything decodes them, as a zip bomb would be.
@Suite struct DecodeBombRatioTests {
    let dir: String

    init() throws {
        dir = NSTemporaryDirectory() + "pm-ratio-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    func outcome(_ bytes: [UInt8], _ with: [String: JSONValue] = [:]) throws -> StageOutcome {
        let stage = try ValidateStage(options: StageOptions(validating: with, against: ValidateStage.options, place: "test"),
                                      environment: StageEnvironment(home: URL(fileURLWithPath: dir)))
        let path = dir + "/f-\(UInt32.random(in: 0...UInt32.max))"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        var st = stat()
        guard lstat(path, &st) == 0 else { throw PhotomemoError(.io, "lstat \(path)") }
        return stage.run(JobContext(id: 1, key: "k", photoPath: path, photoSHA256: SHA256.hex(Data(bytes)), photoSeal: PhotoSeal.seal(st),
                                    photoRoot: dir, memo: .photoOnly("f"), results: [:], attempt: 1))
    }

    /// A WebP header claiming `width` x `height`, padded to `bytes`.
    func webp(_ width: Int, _ height: Int, bytes: Int) -> [UInt8] {
        let head = Synthetic.webpVP8X(width: width, height: height)
        return head + [UInt8](repeating: 0, count: max(0, bytes - head.count))
    }

    @Test func fourKilobytesClaimingAHundredMegapixelsIsABomb() throws {
        #expect(try outcome(webp(10_000, 10_000, bytes: 4096)) == .fail(reason:
            "image claims 10000x10000 = 100000000 pixels from 4096 bytes, 24414 pixels a byte, over max_pixels_per_byte (4000): a possible decompression bomb"))
        // The option moves the line.
        guard case .continue = try outcome(webp(10_000, 10_000, bytes: 4096), ["max_pixels_per_byte": 100_000]) else {
            Issue.record("refused past a raised max_pixels_per_byte"); return
        }
    }

    @Test func smallImagesAndRealPhotosAreNotAskedARatio() throws {
        // 4 MP claimed by 30 bytes: under the floor, whatever the ratio.
        guard case .continue = try outcome(webp(2000, 2000, bytes: 0)) else { Issue.record("a 4 MP header refused"); return }
        for name in ["orientation_landscape_1.jpg", "IMG_5195.HEIC", "Canon_40D.jpg"] {
            guard case .continue = try outcome(try photo(name)) else { Issue.record("\(name) refused"); continue }
        }
    }
}
