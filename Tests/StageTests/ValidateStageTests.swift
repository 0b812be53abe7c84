import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing
@testable import ValidateStage

@Suite struct ValidateStageTests {
    let dir: String

    init() throws {
        dir = NSTemporaryDirectory() + "pm-validate-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    func stage(_ with: [String: JSONValue] = [:]) throws -> ValidateStage {
        try ValidateStage(options: StageOptions(validating: with, against: ValidateStage.options, place: "test"),
                          environment: StageEnvironment(home: URL(fileURLWithPath: dir)))
    }

    func run(_ s: ValidateStage, bytes: [UInt8]) throws -> StageOutcome {
        let path = dir + "/f-\(UInt32.random(in: 0...UInt32.max))"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        var st = stat()
        guard lstat(path, &st) == 0 else { throw PhotomemoError(.io, "lstat \(path)") }
        return s.run(job(path, sha256: SHA256.hex(Data(bytes)), seal: PhotoSeal.seal(st)))
    }

    /// A job as intake makes it: the photo's path, the hash of its bytes when taken, and
    /// its seal (the daemon's own file here, unchanged since).
    func job(_ path: String, sha256: String? = String(repeating: "0", count: 64), seal: String? = nil) -> JobContext {
        JobContext(id: 1, key: "k", photoPath: path, photoSHA256: sha256, photoSeal: seal,
                   photoRoot: (path as NSString).deletingLastPathComponent, memo: .photoOnly("f"), results: [:], attempt: 1)
    }

    @Test func acceptsARealPhotoAndReportsWhatItFound() throws {
        let bytes = try photo("orientation_landscape_1.jpg")
        #expect(try run(stage(), bytes: bytes) == .continue(result: [
            "format": "jpeg", "width": 600, "height": 450, "bytes": .int(Int64(bytes.count)),
        ]))
    }

    @Test func pixelBombIsAPermanentFailure() throws {
        // 1 KB of PNG claiming 100,000 x 100,000 pixels.
        guard case .fail(let reason) = try run(stage(), bytes: Synthetic.png(width: 100_000, height: 100_000)) else {
            Issue.record("bomb accepted"); return
        }
        #expect(reason.contains("100000x100000 = 10000000000 pixels, over max_pixels"))
    }

    @Test func limitsAndFormatsComeFromOptions() throws {
        let small = try stage(["max_bytes": 1000])
        guard case .fail(let r1) = try run(small, bytes: try photo("Canon_40D.jpg")) else { Issue.record("accepted"); return }
        #expect(r1 == "file is 7958 bytes, over max_bytes (1000)")
        let pngOnly = try stage(["formats": ["png"]])
        guard case .fail(let r2) = try run(pngOnly, bytes: try photo("Canon_40D.jpg")) else { Issue.record("accepted"); return }
        #expect(r2 == "format jpeg is not accepted (formats: png)")
        #expect(throws: PhotomemoError.self) { try stage(["formats": ["gif"]]) }
    }

    @Test func missingPhotoFailsAndNoPhotoSkips() throws {
        let s = try stage()
        #expect(s.run(job(dir + "/nope"))
            == .fail(reason: "photo file is gone: \(dir)/nope"))
        #expect(s.run(JobContext(id: 1, key: "k", photoPath: nil, memo: MemoJob(), results: [:], attempt: 1)) == .skip(reason: "no photo"))
    }

    @Test func overflowingPNGAndHEICHeadersAreClearFailuresNotTraps() throws {
        // 45 bytes claiming 4294967295 x 4294967295: the pixel count overflows 64 bits.
        let png = Synthetic.png(width: 4_294_967_295, height: 4_294_967_295, withData: false)
        #expect(try run(stage(), bytes: png) == .fail(reason:
            "image claims 4294967295x4294967295 = more than 2^63 pixels, over max_pixels (100000000): a possible decompression bomb"))
        let heic = Synthetic.heic(sizes: [(4_294_967_295, 4_294_967_295), (8, 8)])
        guard case .fail(let reason) = try run(stage(), bytes: heic) else { Issue.record("HEIC bomb accepted"); return }
        #expect(reason.contains("4294967295x4294967295"))
        // Within 64 bits but over the limit: the exact count is named.
        #expect(try run(stage(["max_pixels": 1000]), bytes: Synthetic.png(width: 1, height: 3_000_000)) == .fail(reason:
            "image claims 1x3000000 = 3000000 pixels, over max_pixels (1000): a possible decompression bomb"))
    }

    @Test func bytesThatDifferFromWhatWasHashedAreRefused() throws {
        let path = dir + "/swapped.jpg"
        try Data(try photo("Canon_40D.jpg")).write(to: URL(fileURLWithPath: path))
        let taken = try SHA256.hexOfFile(atPath: path).hex
        guard case .continue = try stage().run(job(path, sha256: taken)) else { Issue.record("the real photo failed"); return }
        // Replaced after intake hashed it: a permanent failure, not a probe of other bytes.
        try Data(try photo("Nikon_D70.jpg")).write(to: URL(fileURLWithPath: path))
        guard case .fail(let reason) = try stage().run(job(path, sha256: taken)) else { Issue.record("changed photo accepted"); return }
        #expect(reason.hasPrefix("photo changed after it was taken"))
    }

    @Test func aFIFOOrDeviceIsRefusedWithoutBlocking() throws {
        let fifo = dir + "/pipe.jpg"
        #expect(mkfifo(fifo, 0o600) == 0)
        // O_NONBLOCK: opening a FIFO with no writer returns at once; fstat then refuses it.
        #expect(try stage().run(job(fifo)) == .fail(reason: "photo is not a regular file: \(fifo)"))
        #expect(try stage().run(job("/dev/zero")) == .fail(reason: "photo is not a regular file: /dev/zero"))
    }

    @Test func aSymlinkSwappedInAfterIntakeIsNeverFollowed() throws {
        let real = dir + "/real.jpg", link = dir + "/link.jpg"
        try Data(try photo("Canon_40D.jpg")).write(to: URL(fileURLWithPath: real))
        #expect(symlink(real, link) == 0)
        #expect(try stage().run(job(link, sha256: try SHA256.hexOfFile(atPath: real).hex)) == .fail(reason: "photo \(link) is reached through a symlink, which is not followed"))
    }

    /// Without the data scan only a stage that decodes the photo checks a sealed JPEG's
    /// image data, so a job without one is refused (`photomemo check` tries the real
    /// compress); with the scan, validate needs nothing of the others.
    @Test func withoutTheDataScanTheJobNeedsAStageThatDecodes() throws {
        let headers = try stage(["scan_data": false]), full = try stage()
        do {
            try headers.check(alongside: [headers, full])
            Issue.record("accepted scan_data false with nothing that decodes")
        } catch let e as PhotomemoError {
            #expect(e.code == .badDefinition && e.message.hasPrefix(#""scan_data": false leaves a JPEG's image data to a stage"#), "\(e)")
        }
        try full.check(alongside: [full])
    }

    /// `scan_data: false`: a sealed JPEG's headers decide, read from its first bytes. Damage
    /// in its image data passes (the decoder's to find); a header past the first 256 KB is
    /// still read; damaged headers and other formats fail as before. An unsealed photo is
    /// read whole and checked against intake's hash: its header could be other bytes'.
    @Test func withoutTheDataScanASealedJPEGIsJudgedByItsHeadersAlone() throws {
        let headers = try stage(["scan_data": false]), full = try stage()
        let corrupted = try photo("corrupted.jpg")
        guard case .continue(let r) = try run(headers, bytes: corrupted) else { Issue.record("headers refused"); return }
        #expect(r["format"] == "jpeg" && r["bytes"] == .int(Int64(corrupted.count)))
        guard case .fail(let why) = try run(full, bytes: corrupted) else { Issue.record("scan missed the damage"); return }
        #expect(why.hasPrefix("JPEG is damaged"))
        // Not sealed (no seal, or another's bytes now): the hash decides first.
        let path = dir + "/unsealed.jpg"
        try Data(corrupted).write(to: URL(fileURLWithPath: path))
        guard case .fail(let changed) = headers.run(job(path)) else { Issue.record("unsealed photo not hash-checked"); return }
        #expect(changed.hasPrefix("photo changed after it was taken"))

        // A 300 KB comment before the frame header: past the first read, found in the whole file.
        let jpeg = try photo("Canon_40D.jpg")
        var padded = Array(jpeg[0..<2])
        for _ in 0..<5 { padded += [0xFF, 0xFE, 0xFF, 0xFF] + [UInt8](repeating: 0x20, count: 65533) }
        padded += jpeg[2...]
        #expect(try run(headers, bytes: padded) == .continue(result: [
            "format": "jpeg", "width": 100, "height": 68, "bytes": .int(Int64(padded.count)),
        ]))

        // Cut inside its headers, or another format (read whole): still refused.
        guard case .fail(let cut) = try run(headers, bytes: Array(jpeg.prefix(300))) else { Issue.record("cut accepted"); return }
        #expect(cut.hasPrefix("JPEG is truncated"), "\(cut)")
        guard case .fail(let png) = try run(headers, bytes: Array(Synthetic.png(width: 10, height: 10).dropLast(12))) else {
            Issue.record("cut PNG accepted"); return
        }
        #expect(png == "PNG is truncated (no IEND chunk)")
    }
}
