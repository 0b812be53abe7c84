import Foundation
import HEIF
import TestSupport
import Testing

/// An `auxl` item of the primary image is an alpha plane only when its `auxC` says so (or
/// says nothing). iPhones since 2020 attach an HDR gain map that way
/// (`urn:com:apple:photo:2020:aux:hdrgainmap`): read as alpha, such photos left compress's
/// own HEIF path for libvips' heifload at about twice the CPU.
@Suite struct HEIFAuxiliaryTests {
    /// IMG_5195.HEIC's `hvcC` box, whole: a real configuration for the container's items.
    static let hvcC: [UInt8] = {
        let b = [UInt8](try! Data(contentsOf: testPhotos.appendingPathComponent("IMG_5195.HEIC")))
        let start = (4..<(b.count - 4)).first { Array(b[$0..<($0 + 4)]) == Array("hvcC".utf8) }! - 4
        let size = Int(b[start]) << 24 | Int(b[start + 1]) << 16 | Int(b[start + 2]) << 8 | Int(b[start + 3])
        return Array(b[start..<(start + size)])
    }()

    /// A container (no pixels): item 1, the primary, and item 2 referring to it with `auxl`
    /// and holding an `auxC` of `auxType` (nil: no auxC); both hvc1 with the real hvcC.
    static func container(auxl: Bool = true, auxType: String?) -> [UInt8] {
        func be(_ v: Int, _ n: Int) -> [UInt8] { (0..<n).reversed().map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        func box(_ type: String, _ payload: [UInt8]) -> [UInt8] { be(payload.count + 8, 4) + Array(type.utf8) + payload }
        func full(_ type: String, _ payload: [UInt8]) -> [UInt8] { box(type, [0, 0, 0, 0] + payload) }
        let ftyp = box("ftyp", Array("heic".utf8) + be(0, 4) + Array("mif1heic".utf8))
        let hdlr = full("hdlr", be(0, 4) + Array("pict".utf8) + [UInt8](repeating: 0, count: 13))
        let iinf = full("iinf", be(2, 2) + [1, 2].flatMap { box("infe", [2, 0, 0, 0] + be($0, 2) + be(0, 2) + Array("hvc1".utf8) + [0]) })
        let iref = full("iref", auxl ? box("auxl", be(2, 2) + be(1, 2) + be(1, 2)) : [])
        var ipco = hvcC + full("ispe", be(64, 4) + be(64, 4))
        if let auxType { ipco += full("auxC", Array(auxType.utf8) + [0]) }
        // Item 1: hvcC (1), ispe (2); item 2: the same and its auxC (3).
        let ipma = full("ipma", be(2, 4) + be(1, 2) + [2, 0x81, 2] + be(2, 2) + (auxType == nil ? [2, 0x81, 2] : [3, 0x81, 2, 0x83]))
        let iprp = box("iprp", box("ipco", ipco) + ipma)
        func iloc(_ data: Int) -> [UInt8] { full("iloc", [0x44, 0x00] + be(2, 2) + [1, 2].flatMap { be($0, 2) + be(0, 2) + be(1, 2) + be(data, 4) + be(16, 4) }) }
        let meta = { (data: Int) in full("meta", hdlr + full("pitm", be(1, 2)) + iinf + iref + iprp + iloc(data)) }
        let mdat = box("mdat", [UInt8](repeating: 0, count: 16))
        return ftyp + meta(ftyp.count + meta(0).count + 8) + mdat
    }

    static func hasAlpha(_ bytes: [UInt8]) throws -> Bool { try bytes.withUnsafeBytes { try HEIFFile.parse($0) }.hasAlpha }

    @Test func anHDRGainMapOrADepthMapIsNoAlpha() throws {
        #expect(try !Self.hasAlpha(Self.container(auxType: "urn:com:apple:photo:2020:aux:hdrgainmap")))
        #expect(try !Self.hasAlpha(Self.container(auxType: "urn:mpeg:hevc:2015:auxid:2")))
        #expect(try !Self.hasAlpha(Self.container(auxl: false, auxType: nil)))
    }

    @Test func anAlphaPlaneOrAnAuxiliaryThatSaysNothingIsAlpha() throws {
        #expect(try Self.hasAlpha(Self.container(auxType: "urn:mpeg:hevc:2015:auxid:1")))
        #expect(try Self.hasAlpha(Self.container(auxType: "urn:mpeg:mpegB:cicp:systems:auxiliary:alpha")))
        #expect(try Self.hasAlpha(Self.container(auxType: nil)))
    }
}
