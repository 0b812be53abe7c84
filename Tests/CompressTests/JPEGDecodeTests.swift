import CVips
import Foundation
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
        let folder = try Compressor().home
        let synthetic = folder + "/synthetic.jpg", subsampled = folder + "/subsampled.jpg", progressive = folder + "/progressive.jpg"
        try SyntheticPhoto.write(to: synthetic, width: 403, height: 301, seed: 7, quality: 95)  // 4:4:4
        try SyntheticPhoto.write(to: subsampled, width: 641, height: 483, seed: 9, quality: 85)  // 4:2:0 (libvips below 90)
        try SyntheticPhoto.write(to: progressive, width: 301, height: 403, orientation: 6, seed: 8, progressive: true)
        let real = ["Canon_40D.jpg", "Nikon_D70.jpg", "Pentax_K10D.jpg", "orientation_portrait_6.jpg", "exif-org_canon-ixus.jpg"]
        for path in real.map({ testPhotos.appendingPathComponent($0).path }) + [synthetic, subsampled, progressive] {
            let photo = try load(path)
            let header = try Vips.open(photo)
            func decode(eighths: Int32, own: Int32) throws -> (pixels: Data, replaced: Int32) {
                var out: UnsafeMutablePointer<VipsImage>?, replaced: Int32 = -1
                var message = [CChar](repeating: 0, count: 256)
                let rc = pm_jpeg_decode(photo.bytes.baseAddress, photo.count, eighths, own, &replaced, header.ptr, &out, &message, 256)
                let image = VipsImageRef(try #require(out), source: photo)
                #expect(rc == 0)
                let bytes = image.width * image.height * image.bands
                return (Data(bytes: pm_vips_pixels(image.ptr), count: bytes), replaced)
            }
            let libjpeg = try decode(eighths: 3, own: 0), own = try decode(eighths: 3, own: 1)
            #expect(libjpeg.replaced == 0)
            // Every component: the 3x3, and a 4:2:0 photo's chroma the 6x6 (libjpeg upsamples it
            // in the inverse DCT).
            #expect(own.replaced == 3, "\(path): replaced for \(own.replaced) components")
            #expect(own.pixels == libjpeg.pixels, "\(path): \(zip(own.pixels, libjpeg.pixels).filter { $0 != $1 }.count) bytes differ")
            #expect(try decode(eighths: 2, own: 1).replaced == 0)
        }
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
