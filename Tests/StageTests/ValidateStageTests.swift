import Foundation
import PhotomemoCore
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
        return s.run(JobContext(id: 1, key: "k", photoPath: path, memo: .photoOnly("f"), results: [:], attempt: 1))
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
        #expect(s.run(JobContext(id: 1, key: "k", photoPath: dir + "/nope", memo: .photoOnly("x"), results: [:], attempt: 1))
            == .fail(reason: "photo file is gone: \(dir)/nope"))
        #expect(s.run(JobContext(id: 1, key: "k", photoPath: nil, memo: MemoJob(), results: [:], attempt: 1)) == .skip(reason: "no photo"))
    }
}
