import CVips
import Foundation
import PhotomemoCore
import TestSupport
import Testing
@testable import CompressStage

/// The JPEG path decodes with libjpeg-turbo directly (`Vips.jpegDirect`): the pixels must
/// be libvips' own decode's, within rounding of the merged upsampling, and a grey JPEG
/// must come out as grey sRGB.
@Suite struct JPEGDecodeTests {
    @Test(arguments: [1, 2, 4, 8])
    func directDecodeMatchesLibvips(_ shrink: Int) throws {
        let photo = try load(testPhotos.appendingPathComponent("orientation_landscape_1.jpg").path)
        let header = try Vips.open(photo)
        let direct = try #require(try Vips.jpegDirect(photo, eighths: 8 / shrink, header: header))
        let vips = try (shrink > 1 ? Vips.jpeg(photo, shrink: shrink) : header).inMemory()
        // libjpeg rounds a scaled side up, libvips may round it down: one row or column at most.
        #expect(abs(direct.width - vips.width) <= 1 && abs(direct.height - vips.height) <= 1,
                "\(direct.width)x\(direct.height) against \(vips.width)x\(vips.height)")
        let w = Int32(min(direct.width, vips.width)), h = Int32(min(direct.height, vips.height))
        let a = try direct.cropped(left: 0, top: 0, width: w, height: h), b = try vips.cropped(left: 0, top: 0, width: w, height: h)
        var diff = 0.0
        #expect(pm_vips_mean_abs_diff(a.ptr, b.ptr, &diff) == 0)
        #expect(diff < 2, "mean difference \(diff) at 1/\(shrink)")
        #expect(direct.orientation == header.orientation)
    }

    /// A portrait decodes at 3/8 through jpeg_idct.h's SSE2 inverse DCTs: the same pixels as
    /// libjpeg's own 3x3 and 6x6, for real cameras' 4:2:0, 4:2:2 and 4:4:4 photos, a generated one and a
    /// progressive one, and only at 3/8 (1/4 keeps libjpeg-turbo's own SIMD).
    @Test func ownThreeEighthsIDCTDecodesLibjpegsPixels() throws {
        for path in try Self.photos() {
            let photo = try load(path)
            let libjpeg = try Self.decode(photo, eighths: 3, own: 0), own = try Self.decode(photo, eighths: 3, own: PM_JPEG_OWN_IDCT)
            #expect(libjpeg.used.idct == 0)
            // Every component: the 3x3, and a 4:2:0 photo's chroma the 6x6 (libjpeg upsamples it
            // in the inverse DCT).
            #expect(own.used.idct == 3, "\(path): replaced for \(own.used.idct) components")
            let differing = Self.differing(own.pixels, libjpeg.pixels)
            #expect(differing == 0, "\(path): \(differing) bytes differ")
            #expect(try Self.decode(photo, eighths: 2, own: PM_JPEG_OWN_IDCT).used.idct == 0)
        }
    }

    /// jpeg_huffman.h decodes a single-scan JPEG's coefficients in place of libjpeg: the same
    /// pixels at every scale, for the photos above and ones with restart markers (every MCU,
    /// every 7, every row; colour and grey); a progressive JPEG keeps libjpeg's.
    @Test func ownHuffmanDecodingDecodesLibjpegsPixels() throws {
        let fixtures = ["restart-every-mcu-420.jpg", "restart-every-7-mcus-422.jpg", "restart-every-row-grey.jpg"]
            .map { packageRoot.appendingPathComponent("Tests/CompressTests/Fixtures/\($0)").path }
        for path in try Self.photos() + fixtures {
            let photo = try load(path)
            for eighths: Int32 in [1, 2, 3, 4, 8] {
                let libjpeg = try Self.decode(photo, eighths: eighths, own: 0)
                let own = try Self.decode(photo, eighths: eighths, own: PM_JPEG_OWN_HUFFMAN | PM_JPEG_OWN_IDCT)
                #expect(own.used.huffman == (path.hasSuffix("progressive.jpg") ? 0 : 1), "\(path)")
                let differing = Self.differing(own.pixels, libjpeg.pixels)
                #expect(differing == 0, "\(path) at \(eighths)/8: \(differing) bytes differ")
            }
        }
    }

    /// Damaged data fails the decode with libjpeg's message, as libjpeg's warnings do: cut
    /// short, a restart marker out of order, a bad Huffman code (libjpeg-turbo's fast path
    /// takes one as a zero), a byte left before a restart marker.
    @Test func ownHuffmanDecodingFailsOnDamage() throws {
        let folder = try Compressor().home
        let restarts = try Data(contentsOf: packageRoot.appendingPathComponent("Tests/CompressTests/Fixtures/restart-every-7-mcus-422.jpg"))
        let sos = try #require(restarts.indices.first { restarts[$0] == 0xFF && restarts[$0 + 1] == 0xDA })
        let rst = try #require((sos + 2..<restarts.count - 1).first { restarts[$0] == 0xFF && restarts[$0 + 1] & 0xF8 == 0xD0 })
        var cut = restarts.prefix(restarts.count / 2)
        cut.append(contentsOf: [0xFF, 0xD9])
        var swapped = restarts
        swapped[rst + 1] = 0xD1
        var extra = restarts
        extra.insert(0x55, at: rst)
        // 64 one bits mid-scan: a code starting in them has 16 ones, never a code.
        var badCode = try Data(contentsOf: testPhotos.appendingPathComponent("orientation_portrait_6.jpg"))
        badCode.replaceSubrange(badCode.count / 2..<badCode.count / 2 + 16, with: Array(repeating: [UInt8](arrayLiteral: 0xFF, 0), count: 8).joined())
        for (name, damaged, message) in [("cut short", Data(cut), "premature end of data segment"), ("restart out of order", swapped, "instead of RST0"),
                                         ("bad code", badCode, "bad Huffman code"), ("a byte before a restart marker", extra, "1 extraneous bytes before marker 0xd0")] {
            let path = folder + "/damaged.jpg"
            try damaged.write(to: URL(fileURLWithPath: path))
            let (rc, text) = Self.decodeFailure(try load(path), eighths: 2, own: PM_JPEG_OWN_HUFFMAN)
            #expect(rc == -1 && text.contains(message), "\(name): \(rc) \(text)")
        }
    }

    static func photos() throws -> [String] {
        let folder = try Compressor().home
        let synthetic = folder + "/synthetic.jpg", subsampled = folder + "/subsampled.jpg", progressive = folder + "/progressive.jpg"
        try SyntheticPhoto.write(to: synthetic, width: 403, height: 301, seed: 7, quality: 95)  // 4:4:4
        try SyntheticPhoto.write(to: subsampled, width: 641, height: 483, seed: 9, quality: 85)  // 4:2:0 (libvips below 90)
        try SyntheticPhoto.write(to: progressive, width: 301, height: 403, orientation: 6, seed: 8, progressive: true)
        let real = ["Canon_40D.jpg", "Nikon_D70.jpg", "Pentax_K10D.jpg", "orientation_portrait_6.jpg", "exif-org_canon-ixus.jpg"]
        return real.map { testPhotos.appendingPathComponent($0).path } + [synthetic, subsampled, progressive]
    }

    static func decode(_ photo: PhotoBytes, eighths: Int32, own: Int) throws -> (pixels: Data, used: pm_jpeg_own) {
        var out: UnsafeMutablePointer<VipsImage>?, used = pm_jpeg_own(idct: -1, huffman: -1)
        var message = [CChar](repeating: 0, count: 256)
        let header = try Vips.open(photo)
        let rc = pm_jpeg_decode(photo.bytes.baseAddress, photo.count, eighths, Int32(own), &used, header.ptr, &out, &message, 256)
        #expect(rc == 0, "\(String(cString: message))")
        let image = VipsImageRef(try #require(out), source: photo)
        return (Data(bytes: pm_vips_pixels(image.ptr), count: image.width * image.height * image.bands), used)
    }

    /// Bytes that differ (a failed `==` on two Datas has swift-testing diff them: minutes).
    static func differing(_ a: Data, _ b: Data) -> Int {
        a.withUnsafeBytes { x in b.withUnsafeBytes { y in (0..<min(x.count, y.count)).reduce(abs(x.count - y.count)) { $0 + (x[$1] != y[$1] ? 1 : 0) } } }
    }

    static func decodeFailure(_ photo: PhotoBytes, eighths: Int32, own: Int) -> (Int32, String) {
        var out: UnsafeMutablePointer<VipsImage>?
        var message = [CChar](repeating: 0, count: 256)
        guard let header = try? Vips.open(photo) else { return (-2, "no header") }
        let rc = pm_jpeg_decode(photo.bytes.baseAddress, photo.count, eighths, Int32(own), nil, header.ptr, &out, &message, 256)
        if let out { g_object_unref(out) }
        return (rc, String(cString: message))
    }

    @Test func greyJPEGBecomesGreySRGB() throws {
        let c = try Compressor(["renditions": [["name": "display", "width": 60]]])
        let src = try Vips.open(load(testPhotos.appendingPathComponent("orientation_landscape_1.jpg").path)).inMemory()
        let grey = try src.then("band") { pm_vips_extract_band($0, $1, 1) }
        let path = c.home + "/grey.jpg"
        try grey.encode(.jpeg, quality: 90, strip: true).write(to: URL(fileURLWithPath: path))
        var expected = 0.0
        #expect(pm_vips_avg(grey.ptr, &expected) == 0)
        guard case .continue(let r) = c.run(path) else { Issue.record("grey JPEG failed"); return }
        let means = try bandMeans(rendition(r, "display").path)
        #expect(means.count == 3)
        #expect(means.allSatisfy { abs($0 - expected) < 4 }, "\(means) against \(expected)")
    }

    /// The JPEG path also encodes with libjpeg-turbo directly (`pm_jpeg_encode`): what
    /// libvips' jpegsave writes with the same settings, byte for byte, RGB and grey, and a
    /// crop (not in memory yet) too.
    @Test func directEncodeWritesWhatLibvipsWrites() throws {
        let src = try Vips.open(load(testPhotos.appendingPathComponent("orientation_landscape_1.jpg").path)).inMemory()
        let grey = try src.then("band") { pm_vips_extract_band($0, $1, 1) }
        let crop = try src.cropped(left: 33, top: 17, width: 201, height: 99)
        for (name, image) in [("rgb", src), ("grey", grey), ("crop", crop)] {
            let direct = try image.encode(.jpeg, quality: 83, strip: true)
            var buf: UnsafeMutableRawPointer?
            var len = 0
            #expect(pm_vips_jpegsave_buffer(image.ptr, &buf, &len, 83, 1) == 0)
            let vips = Data(bytes: try #require(buf), count: len)
            pm_vips_free(buf)
            #expect(direct == vips, "\(name): \(direct.count) against \(vips.count) bytes")
        }
    }
}
