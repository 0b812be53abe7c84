import Foundation
@testable import HEIF
import Testing
import TestSupport
import ValidateStage

/// What a HEIF file may declare before anyone parses it (an attacker's findings): tens of
/// thousands of items cost libheif's header parse seconds, and an item's extents, each
/// spanning the whole file, made libheif concatenate over 500 MB before refusing it.
/// Validate refuses such a file with the reason; compress refuses it too.
@Suite struct HEIFLimitsTests {
    /// A HEIF container (no image data): `items` hvc1 items in iinf, and iloc giving item 1
    /// the `extents` (offset, length) pairs.
    static func container(items: Int = 1, extents: (Int) -> [(Int, Int)]) -> [UInt8] {
        func be(_ v: Int, _ n: Int) -> [UInt8] { (0..<n).reversed().map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        func box(_ type: String, _ payload: [UInt8]) -> [UInt8] { be(payload.count + 8, 4) + Array(type.utf8) + payload }
        func full(_ type: String, _ payload: [UInt8]) -> [UInt8] { box(type, [0, 0, 0, 0] + payload) }
        let ftyp = box("ftyp", Array("heic".utf8) + be(0, 4) + Array("mif1heic".utf8))
        let hdlr = full("hdlr", be(0, 4) + Array("pict".utf8) + [UInt8](repeating: 0, count: 13))
        let infes = (1...items).flatMap { id in box("infe", [2, 0, 0, 0] + be(id, 2) + be(0, 2) + Array("hvc1".utf8) + [0]) }
        let iinf = full("iinf", be(items, 2) + infes)
        // The iloc's size does not depend on the offsets, so the file's length is known first.
        func iloc(_ fileSize: Int) -> [UInt8] {
            let list = extents(fileSize)
            return full("iloc", [0x44, 0x00] + be(1, 2) + be(1, 2) + be(0, 2) + be(list.count, 2)
                + list.flatMap { be($0.0, 4) + be($0.1, 4) })
        }
        let mdat = box("mdat", [UInt8](repeating: 7, count: 4096))
        let size = ftyp.count + 12 + hdlr.count + full("pitm", be(1, 2)).count + iinf.count + iloc(0).count + mdat.count
        return ftyp + full("meta", hdlr + full("pitm", be(1, 2)) + iinf + iloc(size)) + mdat
    }

    static func limit(_ bytes: [UInt8]) -> String? {
        do { try bytes.withUnsafeBytes { try HEIFFile.checkLimits($0) }; return nil } catch { return "\(error)" }
    }

    @Test func aFileWithinTheLimitsPasses() {
        // No item limit is passed; the container's one item declares no size, which is refused too.
        #expect(Self.limit(Self.container { size in [(size - 4096, 4096)] }) == "item 1 (hvc1) declares no size (ispe)")
    }

    @Test func tooManyItemsExtentsOrBytesAreRefused() {
        #expect(Self.limit(Self.container(items: 5000) { size in [(size - 4096, 4096)] })?.contains("it declares 5000 items; at most 4096") == true)
        #expect(Self.limit(Self.container { size in Array(repeating: (size - 4096, 100), count: 33) })?.contains("is in 33 extents; at most 32") == true)
        // Two extents that each span the file: more bytes than it has.
        let twice = Self.container { size in [(0, size), (0, size)] }
        #expect(Self.limit(twice)?.contains("extents add up to more bytes than the file has") == true)
        let refused = twice.withUnsafeBytes { b in Result { try ImageProbe.probe(b, scanData: true) } }
        guard case .failure(let e) = refused else { Issue.record("validate took it"); return }
        #expect("\(e)".contains("HEIF is refused: item 1's extents add up to more bytes than the file has"), "\(e)")
    }
}

/// What the HEVC streams code, not only what `ispe` says (an attacker's findings): a 64x64
/// ispe fronting an 8192x8192 stream made the decoder allocate and decode the large picture
/// for each of a grid's references to it, past the decode budget, for hours; a grid of far
/// more tiles than its image needs did the same with honest tiles. Both are refused before
/// any decoder sees the file.
@Suite struct HEIFPictureSizeTests {
    static let original = [UInt8](try! Data(contentsOf: testPhotos.appendingPathComponent("IMG_5195.HEIC")))

    static func limit(_ bytes: [UInt8]) -> String? { HEIFLimitsTests.limit(bytes) }

    @Test func theSPSsPictureSizeIsRead() throws {
        let file = try Self.original.withUnsafeBytes { try HEIFFile.parse($0) }
        #expect(file.hevc.codedSize?.width == 512 && file.hevc.codedSize?.height == 512)
        #expect(Self.limit(Self.original) == nil)
    }

    @Test func aStreamCodingPicturesLargerThanItsIspeIsRefused() throws {
        // Every tile's ispe (512x512) says 64x64: the stream still codes 512x512.
        var b = Self.original
        let tileISPE: [UInt8] = Array("ispe".utf8) + [0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2, 0]
        let at = (0..<(b.count - tileISPE.count)).first { Array(b[$0..<($0 + tileISPE.count)]) == tileISPE }!
        b.replaceSubrange((at + 8)..<(at + 16), with: [0, 0, 0, 64, 0, 0, 0, 64])
        #expect(Self.limit(b)?.contains("stream codes 512x512 pictures, larger than its ispe (64x64)") == true, "\(Self.limit(b) ?? "taken")")
        let refused = b.withUnsafeBytes { b in Result { try ImageProbe.probe(b, scanData: true) } }
        guard case .failure(let e) = refused else { Issue.record("validate took it"); return }
        #expect("\(e)".contains("HEIF is refused: item"), "\(e)")
    }

    /// The truth hidden where a reader of the first SPS in hvcC does not look (the second
    /// review's findings: each decoded in minutes at 2 GB): a second SPS after a lying one,
    /// the real SPS in the item's own data, no ispe at all. libheif decodes all three.
    @Test(arguments: [("twosps", "stream codes 512x512 pictures, larger than its ispe (64x64)"),
                      ("inband", "stream codes 512x512 pictures, larger than its ispe (64x64)"),
                      ("noispe", "item 1 (hvc1) declares no size (ispe)"), ("honest", ""),
                      ("overlay", "its iovl image of 64x64 draws on 1048576 pixels of 4 images, more than twice its own"),
                      // Inputs of 2^64 pixels: a count past Int.max, a trap once (fuzz-probe's find).
                      ("vastoverlay", "its iovl image of 64x64 draws on more than 9223372036854775807 pixels of 4 images")])
    func aLieHiddenInTheStreamIsFound(_ mode: String, _ refusal: String) throws {
        let dir = NSTemporaryDirectory() + "pm-heiflie-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (status, _, err) = try runTool([try realTool("python3", package: "python3"),
                                            packageRoot.appendingPathComponent("Tests/CompressTests/Fixtures/heif_lies.py").path,
                                            testPhotos.appendingPathComponent("IMG_5195.HEIC").path, dir + "/lie.heic", mode])
        #expect(status == 0, "heif_lies.py: \(err)")
        let said = Self.limit([UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/lie.heic"))))
        #expect(refusal.isEmpty ? said == nil : said?.contains(refusal) == true, "\(mode): \(said ?? "taken")")
    }

    /// AV1's sequence header, reduced (AVIF's usual) and full (timing, decoder model, two
    /// operating points), as dav1d reads it: the largest frame it allows.
    @Test func anAV1SequenceHeadersLargestFrameIsRead() {
        func obu(_ bits: String) -> [UInt8] {
            let padded = bits + String(repeating: "0", count: (8 - bits.count % 8) % 8)
            let payload = stride(from: 0, to: padded.count, by: 8).map { i -> UInt8 in
                UInt8(padded.dropFirst(i).prefix(8), radix: 2)!
            }
            return [0x0A, UInt8(payload.count)] + payload  // type 1 (sequence header), with its size
        }
        func bits(_ v: Int, _ n: Int) -> String { String(String(v, radix: 2).reversed()).padding(toLength: n, withPad: "0", startingAt: 0).reversed().map(String.init).joined() }
        let size = bits(12, 4) + bits(12, 4) + bits(8191, 13) + bits(4095, 13)
        let reduced = bits(0, 3) + "1" + "1" + bits(31, 5) + size
        // timing info (equal_picture_interval, uvlc 2 = 011), a decoder model (buffer delay 10 bits),
        // initial display delays, two operating points (the second with a tier and both extras).
        let full = bits(0, 3) + "0" + "0" + "1" + bits(1, 32) + bits(30, 32) + "1" + "011" + "1" + bits(9, 5) + bits(1, 32) + bits(4, 5) + bits(4, 5)
            + "1" + bits(1, 5)
            + bits(0, 12) + bits(3, 5) + "0" + "0"
            + bits(1, 12) + bits(9, 5) + "1" + "1" + bits(5, 10) + bits(6, 10) + "0" + "1" + bits(2, 4)
            + size
        for (name, header) in [("reduced", reduced), ("full", full)] {
            let sizes = obu(header).withUnsafeBytes { AV1PictureSize.inBand($0) }
            #expect(sizes.count == 1 && sizes.first?.width == 8192 && sizes.first?.height == 4096, "\(name): \(sizes)")
        }
    }

    @Test func aGridReachingPastItsImageByMoreThanATileIsRefused() throws {
        let dir = NSTemporaryDirectory() + "pm-heifgrid-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for (columns, rows, width, height, refused) in [(16, 12, 800, 800, true), (16, 12, 7681, 5633, false), (16, 12, 7680, 5633, true)] {
            let out = dir + "/g.heic"
            let (status, _, err) = try runTool([try realTool("python3", package: "python3"), packageRoot.appendingPathComponent("bench/heic_grid.py").path,
                                                testPhotos.appendingPathComponent("IMG_5195.HEIC").path, out, "\(columns)", "\(rows)", "\(width)", "\(height)"])
            #expect(status == 0, "heic_grid.py: \(err)")
            let said = Self.limit([UInt8](try Data(contentsOf: URL(fileURLWithPath: out))))
            #expect((said?.contains("reaches past its \(width)x\(height) image by more than a tile") == true) == refused, "\(width)x\(height): \(said ?? "taken")")
        }
    }
}
