import Foundation
import HEIF
import StageKit
import TestSupport
import Testing
@testable import CompressStage

/// Compress's own HEIF path (HEIFDecode) against libvips' heifload on the same real iPhone
/// photo: the same rendition sizes exactly and pixels within a stated mean difference; its
/// irot/imir edited in a copy (property values in place: irot's angle, and the `pixi` box
/// renamed `imir`, whose first byte is then its axis; no new encoded image).
@Suite struct HEIFDecodeTests {
    static let original = [UInt8](try! Data(contentsOf: testPhotos.appendingPathComponent("IMG_5195.HEIC")))

    /// The byte offset of the first box of `type` (the test file's ipco boxes are unique).
    static func offset(of type: String, in b: [UInt8]) -> Int {
        let t = Array(type.utf8)
        return (4..<(b.count - 4)).first { Array(b[$0..<($0 + 4)]) == t }! - 4
    }

    /// A copy with irot's angle set to `quarterTurns` and, when `mirror` is set, the pixi box
    /// renamed imir with that axis.
    static func variant(quarterTurns: Int, mirror: Int? = nil) -> [UInt8] {
        var b = original
        b[offset(of: "irot", in: b) + 8] = UInt8(quarterTurns)
        if let mirror {
            let p = offset(of: "pixi", in: b)
            b.replaceSubrange((p + 4)..<(p + 9), with: Array("imir".utf8) + [UInt8(mirror)])
        }
        return b
    }

    /// Both paths' renditions of `bytes`; returns the largest mean difference (0-255).
    /// `directBudget`: the decode memory the direct path has (libvips' path has the default).
    func compare(_ bytes: [UInt8], _ what: String, expectDirect: Bool = true, directBudget: Int64? = nil) throws -> Double {
        let dir = NSTemporaryDirectory() + "pm-heif-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/photo.heic"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let photo = try load(path)
        // Each step says what failed (a libvips error can carry another thread's words).
        func step<T>(_ name: String, _ body: () throws -> T) throws -> T {
            do { return try body() } catch { throw Vips.Failure(description: "\(what), \(name): \(error)") }
        }
        #expect((HEIFDecode.handling(photo, header: try step("open") { try Vips.open(photo) }) != nil) == expectDirect, "\(what): which path")
        var c = try Compressor()
        if let directBudget { c.stage.decodeMemory.limitBytes = directBudget }
        let direct = try step("the direct path") { try c.stage.make(photo) }
        var stage = try Compressor().stage
        stage.decodesHEIFDirectly = false
        let vips = try step("libvips' path") { try stage.make(photo) }
        c = try Compressor()
        var worst = 0.0
        for ((r, a, aw, ah), (_, b, bw, bh)) in zip(direct.1, vips.1) {
            #expect(aw == bw && ah == bh, "\(what) \(r.name): \(aw)x\(ah) against libvips' \(bw)x\(bh)")
            try a.write(to: URL(fileURLWithPath: dir + "/a-\(r.name).jpg"))
            try b.write(to: URL(fileURLWithPath: dir + "/b-\(r.name).jpg"))
            let prefix = { (d: Data) in d.prefix(4).map { String(format: "%02x", $0) }.joined() }
            worst = max(worst, try step("comparing \(r.name) (\(a.count) bytes, \(prefix(a)); libvips' \(b.count), \(prefix(b)))") {
                try meanDifference(dir + "/a-\(r.name).jpg", dir + "/b-\(r.name).jpg")
            })
        }
        #expect(direct.0 == vips.0, "\(what): the record's facts")
        return worst
    }

    @Test func theDirectPathMatchesLibvipsOnARealIPhonePhoto() throws {
        let d = try compare(Self.original, "IMG_5195.HEIC")
        #expect(d < 1.5, "mean difference \(d)")  // 0.95 measured (display q90, thumbnail q70)
    }

    @Test(arguments: [(1, nil), (0, 0), (3, 1)] as [(Int, Int?)])
    func rotatedAndMirroredCopiesMatchLibvips(_ turns: Int, _ mirror: Int?) throws {
        let d = try compare(Self.variant(quarterTurns: turns, mirror: mirror), "irot \(turns) imir \(mirror.map(String.init) ?? "-")")
        #expect(d < 1.5, "mean difference \(d)")
    }

    /// A layout the path does not take (here hvcC saying 4:2:2, which libheif ignores for
    /// the stream's own SPS) is decoded by libvips, as every HEIC was before.
    @Test func anUnhandledLayoutFallsBackToLibvips() throws {
        var b = Self.original
        b[Self.offset(of: "hvcC", in: b) + 8 + 16] = 0xFE  // chroma_format_idc 2
        #expect(try compare(b, "hvcC 4:2:2", expectDirect: false) == 0)
    }

    /// The HEIF path reserves what it holds (DecodeEstimate.heif: a tile row, rings of rows
    /// and the base; no full-size frame): IMG_5195.HEIC decodes within a 24 MB budget, where
    /// libvips' heifload path needs about 55 MB and is refused by the same budget.
    @Test func theDecodeReservationIsATileRowNotAFrame() throws {
        let c = try Compressor()
        c.stage.decodeMemory.limitBytes = 24 << 20
        let photo = try load(testPhotos.appendingPathComponent("IMG_5195.HEIC").path)
        #expect(throws: Never.self) { try c.stage.make(photo) }
        var libvips = c.stage
        libvips.decodesHEIFDirectly = false
        #expect(throws: PhotomemoError.self) { try libvips.make(photo) }
    }

    /// A 48 MP grid (8064x6048, 16x12 tiles: an iPhone's "HEIF Max" layout) made of the real
    /// photo's own tiles by bench/heic_grid.py: decoded within a 40 MB budget that libvips'
    /// path (a full 146 MB frame) is refused by, to the same renditions as libvips' unbounded.
    @Test func aFortyEightMegapixelGridIsDecodedWithinATileRowsBudget() throws {
        let dir = NSTemporaryDirectory() + "pm-heif48-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (status, _, err) = try runTool([try realTool("python3", package: "python3"), packageRoot.appendingPathComponent("bench/heic_grid.py").path,
                                            testPhotos.appendingPathComponent("IMG_5195.HEIC").path, dir + "/p48.heic"])
        #expect(status == 0, "heic_grid.py: \(err)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/p48.heic")))
        let grid = try bytes.withUnsafeBytes { try HEIFFile.parse($0) }
        #expect(grid.columns == 16 && grid.rows == 12 && grid.width == 8064 && grid.height == 6048)
        let budget: Int64 = 40 << 20
        var libvips = try Compressor().stage
        libvips.decodeMemory.limitBytes = budget
        libvips.decodesHEIFDirectly = false
        #expect(throws: PhotomemoError.self) { try libvips.make(try load(dir + "/p48.heic")) }
        let d = try compare(bytes, "48 MP grid", directBudget: budget)
        #expect(d < 2.5, "mean difference \(d)")  // 1.65 measured: a 9.4x shrink, two resamplers
    }

    /// Every prefix of the file's boxes is refused with a Problem (or parsed), never a trap.
    @Test func truncatedFilesAreProblemsNotTraps() throws {
        let mdat = Self.offset(of: "mdat", in: Self.original)
        for n in 0..<mdat {
            _ = Self.original[..<n].withUnsafeBytes { try? HEIFFile.parse($0) }
        }
        let whole = try Self.original.withUnsafeBytes { try HEIFFile.parse($0) }
        #expect(whole.columns * whole.rows == 42 && whole.width == 2566 && whole.height == 3313)
    }
}
