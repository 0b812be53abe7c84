import CVips
import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing
@testable import CompressStage

/// A compress stage on a temp home, and pixel helpers built on libvips itself.
struct Compressor {
    let home: String
    let stage: CompressStage

    init(_ options: [String: JSONValue] = [:]) throws {
        home = NSTemporaryDirectory() + "pm-compress-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        stage = try CompressStage(options: StageOptions(validating: options, against: CompressStage.options, place: "test"),
                                  environment: StageEnvironment(home: URL(fileURLWithPath: home)))
    }

    /// Runs the stage as the daemon would: with the hash intake took of the file (or `sha256`).
    func run(_ path: String, key: String = "k", sha256: String? = nil) -> StageOutcome {
        let taken = sha256 ?? (try? SHA256.hexOfFile(atPath: path).hex)
        return stage.run(JobContext(id: 1, key: key, photoPath: path, photoSHA256: taken,
                                         photoRoot: (path as NSString).deletingLastPathComponent, memo: .photoOnly("p"), results: [:], attempt: 1))
    }

    func result(_ photo: String) throws -> JSONValue {
        let outcome = run(testPhotos.appendingPathComponent(photo).path, key: photo)
        guard case .continue(let r) = outcome else {
            Issue.record("\(photo): \(outcome)")
            throw CancellationError()
        }
        return r
    }
}

/// A test's own image file, read (and hash-checked) as the stage reads photos.
func load(_ path: String) throws -> PhotoBytes {
    try PhotoBytes.read(PhotoFile(path, beneath: (path as NSString).deletingLastPathComponent, owner: nil, seal: nil, maxBytes: 1 << 30),
                        sha256: SHA256.hexOfFile(atPath: path).hex, seal: nil)
}

func open(_ path: String) throws -> VipsImageRef { try Vips.open(load(path)) }

/// Mean absolute difference per channel value (0-255) of two same-size images.
func meanDifference(_ a: String, _ b: String) throws -> Double {
    let x = try open(a).inMemory(), y = try open(b).inMemory()
    #expect(x.width == y.width && x.height == y.height)
    var d = 0.0
    #expect(pm_vips_mean_abs_diff(x.ptr, y.ptr, &d) == 0)
    return d
}

func rendition(_ r: JSONValue, _ name: String) -> (path: String, width: Int64, height: Int64) {
    let o = r["renditions"]?[name]
    return (o?["path"]?.stringValue ?? "", o?["width"]?.intValue ?? 0, o?["height"]?.intValue ?? 0)
}

@Suite struct CompressOrientationTests {
    @Test func everyLandscapeOrientationComesOutUprightAt860x645() throws {
        let c = try Compressor()
        let reference = rendition(try c.result("orientation_landscape_1.jpg"), "display")
        #expect(reference.width == 860 && reference.height == 645)
        for n in 2...8 {
            let r = try c.result("orientation_landscape_\(n).jpg")
            let d = rendition(r, "display")
            #expect(d.width == 860 && d.height == 645, "orientation \(n)")
            #expect(try meanDifference(d.path, reference.path) < 6, "orientation \(n) is not upright")
            let t = rendition(r, "thumbnail")
            #expect(t.width == 200 && t.height == 200)
            #expect(r["exif"]?["orientation"] == .int(Int64(n)))
            #expect(r["original"]?["width"] == 600 && r["original"]?["height"] == 450)
        }
    }

    @Test func everyPortraitOrientationComesOutUprightAt860x1147() throws {
        let c = try Compressor()
        let reference = rendition(try c.result("orientation_portrait_1.jpg"), "display")
        #expect(reference.width == 860 && reference.height == 1147)
        for n in 2...8 {
            let d = rendition(try c.result("orientation_portrait_\(n).jpg"), "display")
            #expect(d.width == 860 && d.height == 1147, "orientation \(n)")
            #expect(try meanDifference(d.path, reference.path) < 6, "orientation \(n) is not upright")
        }
    }

    @Test func theUprightComparisonWouldCatchAnUnrotatedImage() throws {
        // Control for the two tests above: orientation 3 stored as is (upside down), scaled
        // to the same size, differs from the upright reference by far more than 6.
        let c = try Compressor(["renditions": [["name": "raw", "width": 860]]])
        let ref = rendition(try c.result("orientation_landscape_1.jpg"), "raw")
        let raw = try Vips.jpeg(load(testPhotos.appendingPathComponent("orientation_landscape_3.jpg").path), shrink: 1)
        let scaled = try raw.resampled(width: 860, height: 645)
        let file = c.home + "/unrotated.jpg"
        try scaled.encode(.jpeg, quality: 90, strip: true).write(to: URL(fileURLWithPath: file))
        #expect(try meanDifference(file, ref.path) > 20)
    }
}
