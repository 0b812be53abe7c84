import CVips
import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing
import ValidateStage
@testable import CompressStage

/// The average of each band of an image file.
func bandMeans(_ path: String) throws -> [Double] {
    let img = try Vips.open(load(path)).inMemory()
    var out: [Double] = []
    for b in 0..<Int32(vips_image_get_bands(img.ptr)) {
        let band = try img.then("band") { pm_vips_extract_band($0, $1, b) }
        var v = 0.0
        #expect(pm_vips_avg(band.ptr, &v) == 0)
        out.append(v)
    }
    return out
}

@Suite struct CompressFormatTests {
    @Test func heicConvertsUpright() throws {
        let c = try Compressor()
        let r = try c.result("IMG_5195.HEIC")
        let d = rendition(r, "display")
        #expect(r["original"]?["format"] == "heic")
        let ow = r["original"]?["width"]?.intValue ?? 1, oh = r["original"]?["height"]?.intValue ?? 1
        #expect(d.width == 860)
        #expect(abs(Double(d.height) - 860 * Double(oh) / Double(ow)) <= 1)
        #expect(rendition(r, "thumbnail").width == 200)
    }

    /// AV1 in HEIF: libvips' heifload (libheif with dav1d) decodes it; the record says avif.
    @Test func avifIsDecodedAndRecordedAsAVIF() throws {
        let c = try Compressor(["renditions": [["name": "display", "width": 60]]])
        let src = try Vips.open(load(testPhotos.appendingPathComponent("orientation_landscape_1.jpg").path)).resampled(width: 120, height: 90)
        var buf: UnsafeMutableRawPointer?
        var len = 0
        #expect(pm_vips_avifsave_buffer(src.ptr, &buf, &len) == 0)
        let path = c.home + "/photo.avif"
        try Data(bytes: try #require(buf), count: len).write(to: URL(fileURLWithPath: path))
        pm_vips_free(buf)
        guard case .continue(let r) = c.run(path) else { Issue.record("AVIF failed: \(c.run(path))"); return }
        #expect(r["original"]?["format"] == "avif")
        #expect(r["original"]?["width"] == 120 && rendition(r, "display").width == 60)
        // The coding decides, not the major brand: this AVIF under "mif1", and a real HEIC
        // under "avif" (an attacker's two swaps) are each what they are.
        var av1 = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        av1.replaceSubrange(8..<12, with: Array("mif1".utf8))
        try Data(av1).write(to: URL(fileURLWithPath: path))
        guard case .continue(let asMif1) = c.run(path) else { Issue.record("AVIF as mif1 failed: \(c.run(path))"); return }
        #expect(asMif1["original"]?["format"] == "avif")
        #expect(try ImageProbe.probe(av1).format == .avif)
        var hevc = [UInt8](try Data(contentsOf: testPhotos.appendingPathComponent("IMG_5195.HEIC")))
        hevc.replaceSubrange(8..<12, with: Array("avif".utf8))
        #expect(try ImageProbe.probe(hevc).format == .heic)
    }

    @Test func alphaIsFlattenedOnWhite() throws {
        let c = try Compressor(["renditions": [["name": "display", "width": 60]]])
        let png = c.home + "/alpha.png"
        try makePNG(png, mode: "rgba")
        guard case .continue(let r) = c.run(png) else { Issue.record("failed"); return }
        let means = try bandMeans(rendition(r, "display").path)
        #expect(means.count == 3)
        #expect(means.allSatisfy { $0 > 250 }, "\(means)")  // white, not red or black
    }

    @Test func sixteenBitAndGreyPNGsBecomeEightBitSRGB() throws {
        let c = try Compressor(["renditions": [["name": "display", "width": 60]]])
        for mode in ["grey16", "grey"] {
            let png = c.home + "/\(mode).png"
            try makePNG(png, mode: mode)
            guard case .continue(let r) = c.run(png, key: mode) else { Issue.record("\(mode) failed"); continue }
            let means = try bandMeans(rendition(r, "display").path)
            #expect(means.count == 3, "\(mode)")
            let expected = mode == "grey16" ? 128.0 : 200.0
            #expect(means.allSatisfy { abs($0 - expected) < 3 }, "\(mode): \(means)")
        }
    }

    @Test func webpInAndWebPOut() throws {
        let c = try Compressor(["renditions": [["name": "display", "width": 300, "format": "webp", "quality": 80]]])
        let src = try Vips.open(load(testPhotos.appendingPathComponent("orientation_landscape_1.jpg").path)).inMemory()
        let webp = c.home + "/in.webp"
        try src.encode(.webp, quality: 90, strip: true).write(to: URL(fileURLWithPath: webp))
        guard case .continue(let r) = c.run(webp) else { Issue.record("webp failed"); return }
        #expect(r["original"]?["format"] == "webp")
        let d = rendition(r, "display")
        #expect(d.width == 300 && d.height == 225)
        #expect(Vips.loader(for: try load(d.path)) == "webpload_buffer")
    }

    @Test(arguments: [0.5, 0.9, 0.99])
    func truncatedPhotosFailWithAReason(_ fraction: Double) throws {
        let c = try Compressor()
        for name in ["orientation_landscape_1.jpg", "IMG_5195.HEIC"] {
            let bytes = try testPhoto(name)
            let cut = c.home + "/cut-\(fraction)-\(name)"
            try Data(bytes.prefix(Int(Double(bytes.count) * fraction))).write(to: URL(fileURLWithPath: cut))
            guard case .fail(let reason) = c.run(cut) else { Issue.record("\(name) cut at \(fraction) was accepted"); continue }
            #expect(reason.message.hasPrefix("cannot decode the photo"), "\(reason)")
            // libheif's own words, not only libvips' first line ("source: bad seek to N").
            if name.hasSuffix(".HEIC") { #expect(reason.message.contains("heif: Invalid input"), "\(reason)") }
        }
    }

    @Test func corruptedJPEGFailsInsteadOfGreyGarbage() throws {
        let c = try Compressor()
        guard case .fail(let reason) = c.run(testPhotos.appendingPathComponent("corrupted.jpg").path) else {
            Issue.record("corrupted.jpg was accepted"); return
        }
        #expect(reason.message.hasPrefix("cannot decode the photo"))
    }

    @Test func nonImagesAndUntrustedFormatsFail() throws {
        let c = try Compressor()
        let svg = c.home + "/x.svg"
        try #"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>"#.write(toFile: svg, atomically: true, encoding: .utf8)
        let text = c.home + "/t.jpg"
        try "hello".write(toFile: text, atomically: true, encoding: .utf8)
        for path in [svg, text] {
            guard case .fail = c.run(path) else { Issue.record("\(path) accepted"); continue }
        }
        #expect(c.run(c.home + "/missing.jpg") != .continue())
        #expect(c.stage.run(JobContext(id: 1, key: "k", photoPath: nil, memo: MemoJob(), results: [:], attempt: 1)) == .skip(reason: "no photo"))
    }
}

@Suite struct CompressMetadataTests {
    @Test func exifFactsAreReadAndGPSIsKeptOnlyWhenAsked() throws {
        let stripped = try Compressor().result("Canon_40D.jpg")
        #expect(stripped["exif"]?["make"] == "Canon")
        #expect(stripped["exif"]?["model"] == "Canon EOS 40D")
        #expect(stripped["exif"]?["taken"] == "2008-05-30T15:56:01")
        // The iPhone HEIC carries coordinates (39°3'4.84" N, 94°17'19.58" W).
        let heic = try Compressor().result("IMG_5195.HEIC")
        #expect(heic["exif"]?["make"] == "Apple")
        #expect(heic["exif"]?["taken"] == "2021-04-11T15:47:53-05:00")  // with OffsetTimeOriginal
        #expect(heic["exif"]?["gps"] == nil)
        let kept = try Compressor(["strip_gps": false]).result("IMG_5195.HEIC")
        let gps = try #require(kept["exif"]?["gps"])
        #expect(abs((gps["latitude"]?.doubleValue ?? 0) - 39.05134) < 0.0001, "\(gps)")
        #expect(abs((gps["longitude"]?.doubleValue ?? 0) + 94.28877) < 0.0001, "\(gps)")
    }

    @Test func renditionsCarryNoGPSAndMetadataOnlyWhenKept() throws {
        let plain = try Compressor().result("Canon_40D.jpg")
        let p = try Vips.open(load(rendition(plain, "display").path))
        #expect(!p.has("exif-ifd0-Make"))
        let kept = try Compressor(["keep_metadata": true]).result("IMG_5195.HEIC")
        let k = try Vips.open(load(rendition(kept, "display").path))
        #expect(PhotoMetadata.value(k.string("exif-ifd0-Make")) == "Apple")
        #expect(!k.has("exif-ifd3-GPSLatitude"))
        let withGPS = try Compressor(["keep_metadata": true, "strip_gps": false]).result("IMG_5195.HEIC")
        #expect(try Vips.open(load(rendition(withGPS, "display").path)).has("exif-ifd3-GPSLatitude"))
    }

    @Test func jpegRenditionsAre420WithTheirSizesAndHashes() throws {
        let r = try Compressor().result("orientation_landscape_1.jpg")
        for name in ["display", "thumbnail"] {
            let o = try #require(r["renditions"]?[name])
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: o["path"]!.stringValue!)))
            #expect(o["bytes"] == .int(Int64(bytes.count)))
            #expect(o["sha256"] == .string(SHA256.hex(Data(bytes))))
            // The luma component of the frame header samples 2x2: chroma is 4:2:0.
            let sof = try #require(bytes.indices.dropLast(12).first { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xC0 || bytes[$0] == 0xFF && bytes[$0 + 1] == 0xC2 })
            #expect(bytes[sof + 9] == 3)      // three components
            #expect(bytes[sof + 11] == 0x22)  // Y: h2 v2
            #expect(bytes[sof + 14] == 0x11)  // Cb: h1 v1
        }
    }

    @Test func aRerunWritesTheSameFilesForTheSameKey() throws {
        let c = try Compressor()
        let a = try c.result("Nikon_D70.jpg"), b = try c.result("Nikon_D70.jpg")
        #expect(a == b)
    }
}
