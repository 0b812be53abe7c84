import Foundation
import Index
import PhotomemoCore

/// `index`: turns a finished job into its record — type, memo and typed fields from the
/// memo, asset keys from upload, EXIF and size from compress — or updates the record of
/// the same photo when a later memo names it. Idempotent on the job key.
public struct IndexStage: RecordIndexStage {
    public static let name = "index"
    public static let summary = "writes the job's record (typed fields, assets, EXIF) to the record index"
    public static let workload = StageWorkload.io
    public static let options: [StageOption] = [
        StageOption("index", .string, default: "sqlite:photomemo.sqlite", "sqlite:FILE (relative to the home)"),
    ]

    let store: RecordStore
    public let indexPath: String

    public init(options: StageOptions, environment: StageEnvironment) throws {
        store = try RecordStore.open(spec: options.string("index")!, home: environment.home)
        indexPath = store.path
    }

    public func run(_ job: JobContext) -> StageOutcome {
        let compress = job.results["compress"]
        let original = compress?["original"] ?? job.results["validate"]
        let input = RecordStore.Input(
            jobKey: job.key, photoSHA256: job.photoPath == nil ? nil : job.photoSHA256, memo: job.memo,
            assets: job.results["upload"]?["assets"] ?? .emptyObject, exif: compress?["exif"] ?? .emptyObject,
            width: original?["width"]?.intValue.map(Int.init), height: original?["height"]?.intValue.map(Int.init))
        do {
            let (record, op) = try store.apply(input)
            return .continue(result: ["record": .string(record.id), "op": .string(op), "change_tag": .string(record.changeTag)])
        } catch RecordStore.WriteError.notFound {
            return .fail(reason: "record \(job.memo.record ?? "?") named by the job does not exist")
        } catch {
            return .retry(reason: "index: \(error)")
        }
    }
}
