import Foundation
import StageKit
import TestSupport
import Testing
@testable import CompressStage

/// A progressive JPEG repeating a scan (an attacker's finding: 10,000 copies of one scan
/// held a compress slot for a minute and were stored as a good photo) is refused by its
/// scan count before any decoder reads it; a real progressive JPEG (10 scans) is not.
@Suite struct JPEGScansTests {
    /// A progressive JPEG (libjpeg's progression: 10 scans) and a baseline one, in `c.home`.
    func photos(_ c: Compressor) throws -> (progressive: String, baseline: String) {
        let p = c.home + "/progressive.jpg", b = c.home + "/baseline.jpg"
        try SyntheticPhoto.write(to: p, width: 300, height: 200, seed: 3, quality: 90, progressive: true)
        try SyntheticPhoto.write(to: b, width: 300, height: 200, seed: 3, quality: 90)
        return (p, b)
    }

    func count(_ path: String) throws -> Int {
        try Data(contentsOf: URL(fileURLWithPath: path)).withUnsafeBytes { JPEGScans.count($0) }
    }

    @Test func scansAreCounted() throws {
        let c = try Compressor()
        let (p, b) = try photos(c)
        #expect(try count(p) == 10)
        #expect(try count(b) == 1)
        #expect(try count(testPhotos.appendingPathComponent("Canon_40D.jpg").path) == 1, "an EXIF thumbnail's scan is inside APP1")
    }

    @Test func aJPEGRepeatingAScanPastTheLimitIsRefusedBeforeDecoding() throws {
        let c = try Compressor()
        let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: try photos(c).progressive)))
        // Its last scan (the last SOS up to EOI) again and again.
        let last = (0..<(original.count - 1)).last { original[$0] == 0xFF && original[$0 + 1] == 0xDA }!
        let scan = original[last..<(original.count - 2)]
        for (copies, refused) in [(80, false), (200, true)] {
            let path = c.home + "/scans-\(copies).jpg"
            try Data(original.dropLast(2) + Array(repeating: scan, count: copies).joined() + [0xFF, 0xD9]).write(to: URL(fileURLWithPath: path))
            #expect(try count(path) == (refused ? JPEGScans.limit + 1 : 10 + copies))
            let outcome = c.run(path, key: "scans-\(copies)")
            let said = "\(outcome)"
            #expect(said.contains("JPEG has more than 100 scans") == refused, "\(copies) more scans: \(said)")
            if refused, case .fail = outcome {} else if refused { Issue.record("a permanent failure expected: \(said)") }
        }
    }
}
