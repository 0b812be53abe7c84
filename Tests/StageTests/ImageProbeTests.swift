import Foundation
import TestSupport
import Testing
@testable import ValidateStage

func photo(_ name: String) throws -> [UInt8] { try testPhoto(name) }

/// Minimal, structurally valid files built by hand (the probe reads headers only).
enum Synthetic {
    static func png(width: UInt32, height: UInt32, withEnd: Bool = true, withData: Bool = true) -> [UInt8] {
        var b: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        func chunk(_ type: String, _ data: [UInt8]) {
            b += be32(UInt32(data.count)) + Array(type.utf8) + data + [0, 0, 0, 0]
        }
        chunk("IHDR", be32(width) + be32(height) + [8, 2, 0, 0, 0])
        if withData { chunk("IDAT", [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]) }
        if withEnd { chunk("IEND", []) }
        return b
    }

    static func webpVP8X(width: Int, height: Int) -> [UInt8] {
        var payload: [UInt8] = Array("WEBP".utf8) + Array("VP8X".utf8) + le32(10) + [0, 0, 0, 0]
        payload += le24(width - 1) + le24(height - 1)
        return Array("RIFF".utf8) + le32(payload.count) + payload
    }

    /// An ISO BMFF box: 32-bit size + type + payload (`size` overrides the real size).
    static func box(_ type: String, _ payload: [UInt8], size: UInt32? = nil) -> [UInt8] {
        be32(size ?? UInt32(8 + payload.count)) + Array(type.utf8) + payload
    }

    /// A HEIC header: ftyp, then meta/iprp/ipco holding one ispe (full box) per size.
    static func heic(sizes: [(UInt32, UInt32)], extra: [UInt8] = []) -> [UInt8] {
        let ispes = sizes.flatMap { box("ispe", [0, 0, 0, 0] + be32($0.0) + be32($0.1)) }
        let meta = box("meta", [0, 0, 0, 0] + box("iprp", box("ipco", ispes)))
        return box("ftyp", Array("heic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8)) + meta + extra
    }

    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func le32(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24 & 0xFF)] }
    static func le24(_ v: Int) -> [UInt8] { Array(le32(v).prefix(3)) }
}

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
