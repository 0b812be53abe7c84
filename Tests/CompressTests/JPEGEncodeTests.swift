import CVips
import Foundation
import TestSupport
import Testing
@testable import CompressStage

/// `pm_jpeg_encode` counts optimize_coding's Huffman statistics itself (jpeg_gather.h):
/// its files must be byte for byte what libjpeg writes when it counts them (libvips'
/// jpegsave, the same settings), at every size (partial blocks and MCUs: the dummy blocks
/// are counted too), grey and RGB, at qualities from coarse to 100 (coefficients up to
/// the largest sizes, runs of zeros past 16), on a photo and on noise.
@Suite struct JPEGEncodeTests {
    @Test func countedStatisticsWriteLibjpegsOwnBytes() throws {
        let photo = try Vips.open(load(testPhotos.appendingPathComponent("orientation_landscape_1.jpg").path)).inMemory()
        let sources = [("photo", photo), ("noise", try Self.noise(width: 64, height: 48)),
                       ("edges", try Self.edges(width: 64, height: 48))]
        var compared = 0
        for (name, rgb) in sources {
            let grey = try rgb.then("band") { pm_vips_extract_band($0, $1, 0) }
            for (kind, image) in [("rgb", rgb), ("grey", grey)] {
                for (w, h) in [(1, 1), (7, 9), (8, 8), (16, 16), (17, 15), (23, 33), (33, 17), (64, 48)] {
                    let cut = try image.cropped(left: 0, top: 0, width: Int32(w), height: Int32(h))
                    for q in [10, 50, 90, 100] {
                        let direct = try cut.encode(.jpeg, quality: q, strip: true)
                        var buf: UnsafeMutableRawPointer?
                        var len = 0
                        #expect(pm_vips_jpegsave_buffer(cut.ptr, &buf, &len, Int32(q), 1) == 0)
                        let vips = Data(bytes: try #require(buf), count: len)
                        pm_vips_free(buf)
                        #expect(direct == vips, "\(name) \(kind) \(w)x\(h) Q\(q): \(direct.count) against \(vips.count) bytes")
                        compared += 1
                    }
                }
            }
        }
        #expect(compared == 3 * 2 * 8 * 4)
    }

    /// Uniform noise, 0...255 in each band: large AC coefficients of every size.
    static func noise(width: Int, height: Int) throws -> VipsImageRef {
        var g = SystemRandomNumberGenerator()
        return try image((0..<width * height * 3).map { _ in UInt8.random(in: 0...255, using: &g) }, width: width, height: height)
    }

    /// A few hard edges on flat grey: blocks with long runs of zeros between a few
    /// coefficients (16 and more: the ZRL symbol) and with nothing but DC.
    static func edges(width: Int, height: Int) throws -> VipsImageRef {
        var pixels = [UInt8](repeating: 128, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width where x == 21 || y == 13 || (x > 40 && y > 30) {
                for b in 0..<3 { pixels[(y * width + x) * 3 + b] = x % 2 == 0 ? 255 : 0 }
            }
        }
        return try image(pixels, width: width, height: height)
    }

    static func image(_ pixels: [UInt8], width: Int, height: Int) throws -> VipsImageRef {
        let made = pixels.withUnsafeBytes {
            vips_image_new_from_memory_copy($0.baseAddress, $0.count, Int32(width), Int32(height), 3, VIPS_FORMAT_UCHAR)
        }
        return VipsImageRef(try #require(made))
    }
}
