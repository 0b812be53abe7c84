import Foundation
import TestSupport
import Testing
@testable import ValidateStage

func photo(_ name: String) throws -> [UInt8] { try testPhoto(name) }

@Suite struct ImageProbeTests {
    @Test(arguments: (1...8).map { "orientation_landscape_\($0).jpg" })
    func landscapeJPEGs(_ name: String) throws {
        let p = try ImageProbe.probe(photo(name))
        #expect(p.format == .jpeg)
        // Stored size; orientation 5-8 store the image rotated.
        #expect(Set([p.width, p.height]) == [600, 450])
    }

    @Test func realCameraFilesAndHEIC() throws {
        #expect(try ImageProbe.probe(photo("Canon_40D.jpg")) == ImageProbe(format: .jpeg, width: 100, height: 68))
        let heic = try ImageProbe.probe(photo("IMG_5195.HEIC"))
        #expect(heic.format == .heic)
        #expect(heic.width * heic.height > 1_000_000)
        for name in ["Nikon_D70.jpg", "Pentax_K10D.jpg", "exif-org_canon-ixus.jpg", "exif-org_nikon-e950.jpg", "xmp_no_exif.jpg"] {
            #expect(try ImageProbe.probe(photo(name)).format == .jpeg, "\(name)")
        }
    }

    @Test func corruptedCameraJPEGIsCaught() throws {
        #expect(throws: ImageProbe.Problem("JPEG is damaged: invalid marker 0xFF9F in the image data at byte 229375")) {
            try ImageProbe.probe(photo("corrupted.jpg"))
        }
    }

    @Test(arguments: [0.5, 0.9, 0.99])
    func truncatedFilesAreCaught(_ fraction: Double) throws {
        for name in ["orientation_portrait_1.jpg", "IMG_5195.HEIC"] {
            let b = try photo(name)
            let cut = Array(b.prefix(Int(Double(b.count) * fraction)))
            #expect(throws: ImageProbe.Problem.self, "\(name) cut at \(fraction)") { try ImageProbe.probe(cut) }
        }
        let png = Synthetic.png(width: 10, height: 10)
        #expect(throws: ImageProbe.Problem.self) { try ImageProbe.probe(Array(png.prefix(Int(Double(png.count) * fraction)))) }
    }

    @Test func pngAndWebPHeadersGiveTheirSize() throws {
        #expect(try ImageProbe.probe(Synthetic.png(width: 640, height: 480)) == ImageProbe(format: .png, width: 640, height: 480))
        #expect(try ImageProbe.probe(Synthetic.webpVP8X(width: 4032, height: 3024)) == ImageProbe(format: .webp, width: 4032, height: 3024))
        #expect(throws: ImageProbe.Problem("PNG is truncated (no IEND chunk)")) {
            try ImageProbe.probe(Synthetic.png(width: 1, height: 1, withEnd: false))
        }
    }

    @Test func emptyAndNonImagesAreRejected() {
        #expect(throws: ImageProbe.Problem("file is empty (0 bytes)")) { try ImageProbe.probe([]) }
        #expect(throws: ImageProbe.Problem.self) { try ImageProbe.probe(Array("hello, I am text\n".utf8)) }
        #expect(throws: ImageProbe.Problem.self) { try ImageProbe.probe(Array("<svg xmlns='http://www.w3.org/2000/svg'/>".utf8)) }
    }

    // MARK: hostile headers (each once trapped with an arithmetic overflow)

    @Test func a45BytePNGClaimingTheLargestSizeProbesWithoutOverflow() throws {
        let b = Synthetic.png(width: 4_294_967_295, height: 4_294_967_295, withData: false)
        #expect(b.count == 45)
        let p = try ImageProbe.probe(b)
        #expect(p.width == 4_294_967_295 && p.height == 4_294_967_295)
        #expect(p.pixels == nil)  // 1.8e19 does not fit in 64 bits: the caller refuses it
        #expect(try ImageProbe.probe(Synthetic.png(width: 3, height: 5)).pixels == 15)
    }

    @Test func heicWithHugeIspeSizesPicksTheLargestWithoutOverflow() throws {
        let b = Synthetic.heic(sizes: [(640, 480), (4_294_967_295, 4_294_967_295), (4_294_967_295, 3)])
        let p = try ImageProbe.probe(b)
        #expect(p.format == .heic)
        #expect(p.width == 4_294_967_295 && p.height == 4_294_967_295)
        #expect(p.pixels == nil)
        #expect(try ImageProbe.probe(Synthetic.heic(sizes: [(640, 480), (4032, 3024)])) == ImageProbe(format: .heic, width: 4032, height: 3024))
        // AV1 in HEIF: the same boxes under an avif brand.
        var avif = Synthetic.heic(sizes: [(640, 480), (4032, 3024)])
        avif.replaceSubrange(8..<12, with: Array("avif".utf8))
        #expect(try ImageProbe.probe(avif) == ImageProbe(format: .avif, width: 4032, height: 3024))
    }

    @Test func heicBoxSizesPastTheFileAreProblemsNotTraps() throws {
        // 64-bit "largesize" boxes: all ones (negative as Int), just under 2^63, and a
        // 32-bit size of 0xFFFFFFFF; each once overflowed `i + size`.
        for (high, low) in [(UInt32.max, UInt32.max), (0x7FFF_FFFF, 0xFFFF_FFF0), (0, 0xFFFF_FFFF)] {
            let large = Synthetic.box("free", be(high) + be(low) + [0, 0, 0, 0], size: 1)
            #expect(throws: ImageProbe.Problem.self, "\(high):\(low)") {
                try ImageProbe.probe(Synthetic.heic(sizes: [(10, 10)], extra: large))
            }
        }
        let huge = Synthetic.box("mdat", [1, 2, 3], size: UInt32.max)
        #expect(throws: ImageProbe.Problem("HEIC is truncated (box \"mdat\" at byte 72 claims 4294967295 bytes, 11 are left)")) {
            try ImageProbe.probe(Synthetic.heic(sizes: [(10, 10)], extra: huge))
        }
    }

    func be(_ v: UInt32) -> [UInt8] { Synthetic.be32(v) }
}
