import Foundation
import Index
import PhotomemoCore

/// `index`: turns a finished job into its record — type, memo and typed fields from the
/// memo, asset keys from upload, EXIF and size from compress — or updates the record of
/// the same photo when a later memo names it. Idempotent on the job key.
public struct IndexStage: BatchStage {
    public static let name = "index"
    public static let summary = "writes the job's record (typed fields, assets, EXIF) to the record index"
    public static let workload = StageWorkload.io
    public static let options: [StageOption] = [
        StageOption("index", .string, "sqlite:FILE (relative to the home); default: the job definition's \"database\""),
    ]

    let store: any RecordIndex

    public init(options: StageOptions, environment: StageEnvironment) throws {
        store = try environment.recordIndex(options.string("index"))
    }

    /// Under load the scheduler hands over up to 64 jobs: they are written in one
    /// transaction. If that fails, each job is written alone, so one job's error (a record
    /// that does not exist) stays that job's.
    public func run(batch jobs: [JobContext]) -> [StageOutcome] {
        if jobs.count > 1, let written = try? store.apply(batch: jobs.map(Self.input)) {
            return written.map(Self.outcome)
        }
        return jobs.map { job in
            do {
                return Self.outcome(try store.apply(Self.input(job)))
            } catch RecordWriteError.notFound {
                return .fail(reason: "record \(job.memo.record ?? "?") named by the job does not exist (or is not visible to \(job.memo.owner ?? "its owner"))")
            } catch RecordWriteError.badReference(let field, let record) {
                return .fail(reason: RecordWriteError.badReferenceMessage(field: field, record: record))
            } catch RecordWriteError.forbidden {
                return .fail(reason: "record \(job.memo.record ?? "?") named by the job may not be changed by \(job.memo.owner ?? "its owner")")
            } catch {
                return .retry(reason: "index: \(error)")
            }
        }
    }

    static func input(_ job: JobContext) -> RecordInput {
        let compress = job.results["compress"]
        let original = compress?["original"] ?? job.results["validate"]
        return RecordInput(
            jobKey: job.key, photoSHA256: job.photoSHA256, memo: job.memo,
            assets: job.results["upload"]?["assets"] ?? .emptyObject, exif: compress?["exif"] ?? .emptyObject,
            width: original?["width"]?.intValue.map(Int.init), height: original?["height"]?.intValue.map(Int.init))
    }

    static func outcome(_ written: (record: Record, op: String)) -> StageOutcome {
        .continue(result: ["record": .string(written.record.id), "op": .string(written.op), "change_tag": .string(written.record.changeTag)])
    }
}
