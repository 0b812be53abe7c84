import Foundation
import PhotomemoCore
import StageKit

/// Runs stages on a real photo without a daemon (as NIO's EmbeddedChannel runs handlers
/// without a loop): a temporary home with the photo in its inbox, one job whose working
/// set goes from stage to stage as the scheduler would carry it, and each run's outcome.
///
///     let kit = try StageKit(photo: "Canon_40D.jpg")
///     let outcome = try kit.run(CompressStage.self, ["renditions": …])
///     kit.working[.rendition("display")]?.sha256
public final class StageKit {
    public let home: String
    public let environment: StageEnvironment
    public let photoPath: String
    public let photoSHA256: String
    /// The job's working set as the last stage that continued left it.
    public private(set) var working: WorkingSet
    /// Each stage's result by name, as `job.results` has them.
    public private(set) var results: [String: JSONValue] = [:]
    public var memo: MemoJob
    public let key: String

    /// `photo`: a file of the shared test photos, copied into the home's inbox.
    public init(photo: String, key: String = "kit-job") throws {
        home = NSTemporaryDirectory() + "pm-stagekit-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        for d in ["inbox", "renditions"] {
            try FileManager.default.createDirectory(atPath: home + "/" + d, withIntermediateDirectories: true)
        }
        photoPath = home + "/inbox/" + photo
        let bytes = try Data(contentsOf: testPhotos.appendingPathComponent(photo))
        try bytes.write(to: URL(fileURLWithPath: photoPath))
        photoSHA256 = SHA256.hex(bytes)
        environment = StageEnvironment(home: URL(fileURLWithPath: home))
        working = WorkingSet(photoPath: photoPath, sha256: photoSHA256)
        memo = .photoOnly(photo)
        self.key = key
    }

    deinit { try? FileManager.default.removeItem(atPath: home) }

    /// Builds `stage` with `options` (checked against its table, as a definition is) and
    /// runs the job through it: a `.continue` keeps the working set it left, any other
    /// outcome none of its changes, as the journal would.
    @discardableResult
    public func run<S: Stage>(_ stage: S.Type, _ options: [String: JSONValue] = [:], attempt: Int = 1) throws -> StageOutcome {
        let built = try S(options: StageOptions(validating: options, against: S.options, place: "kit"), environment: environment)
        let job = JobContext(id: 1, key: key, photoPath: photoPath, photoSHA256: photoSHA256, photoRoot: home + "/inbox", memo: memo,
                             results: results, attempt: attempt, working: working)
        let outcome = built.run(job)
        if case .continue(let result) = outcome {
            working = job.working
            results[S.name] = result
        }
        return outcome
    }
}
