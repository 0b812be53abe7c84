import Foundation
import Index
import StageKit

/// `index`: turns a finished job into its record — type, memo and typed fields from the
/// memo, the stored files, EXIF, size and annotations (as fields) from the job's working set — or updates the record of
/// the same photo when a later memo names it. Idempotent on the job key.
public struct IndexStage: BatchStage {
    public static let name = "index"
    public static let summary = "writes the job's record (typed fields, assets, EXIF) to the record index"
    public static let workload = StageWorkload.io
    public static let writesRecords = true
    public static let options: [StageOption] = [
        StageOption("index", .string, "sqlite:FILE (relative to the home); default: the job definition's \"database\""),
    ]

    let store: any RecordIndex
    /// `keep` inbox (`inbox.originals`): a path's new bytes update that path's record.
    let keepsInbox: Bool

    public init(options: StageOptions, environment: StageEnvironment) throws {
        store = try environment.recordIndex(options.string("index"))
        keepsInbox = environment.inbox.originalsMode == .keep
    }

    /// A record's `create` change is its receipt (the original is safe to delete at the
    /// source): it must come after every stage that stores the job's files (`storesAssets`).
    public func check(alongside stages: [any Stage]) throws {
        guard let me = stages.firstIndex(where: { $0 is IndexStage }),
              let store = stages.lastIndex(where: { type(of: $0).storesAssets }), store > me else { return }
        let name = type(of: stages[store]).name
        throw PhotomemoError(.badDefinition, "index must come after \(name): a record (and its create change) is written only once its original is stored")
    }

    /// Under load the scheduler hands over up to 64 jobs: they are written in one
    /// transaction. If that fails, each job is written alone, so one job's error (a record
    /// that does not exist) stays that job's.
    public func run(batch jobs: [JobContext]) -> [StageOutcome] {
        if jobs.count > 1, let written = try? store.apply(batch: jobs.map(input)) {
            return written.map(Self.outcome)
        }
        return jobs.map { job in
            do {
                return Self.outcome(try store.apply(input(job)))
            } catch RecordWriteError.notFound {
                return .fail(.notFound, "record \(job.memo.record ?? "?") named by the job does not exist (or is not visible to \(job.memo.owner ?? "its owner"))")
            } catch RecordWriteError.badReference(let field, let record) {
                return .fail(.badReference, RecordWriteError.badReferenceMessage(field: field, record: record))
            } catch RecordWriteError.forbidden {
                let acl = job.memo.acl == nil ? "" : " (an \"acl\" only by its owner)"
                return .fail(.forbidden, "record \(job.memo.record ?? "?") named by the job may not be changed by \(job.memo.owner ?? "its owner")\(acl)")
            } catch {
                return StageOutcome(catching: error, dependency: StageEnvironment.recordIndexDependency, otherwise: { .retry(.of($0, or: .database), "index: \($0)") })
            }
        }
    }

    /// `ReprocessJob.key`'s: such a job brings new images for its record, not a memo.
    static let reprocessKeyPrefix = "reprocess:"

    func input(_ job: JobContext) -> RecordInput {
        let working = job.working, original = working.original
        // An inbox photo's name (not an absolute path under an --allow-root) in a `keep` inbox.
        let keptPath = keepsInbox && job.photoPath != nil && !(job.memo.photo ?? "/").hasPrefix("/")
        var input = RecordInput(
            jobKey: job.key, photoSHA256: job.photoSHA256, memo: job.memo,
            assets: Self.assets(working), exif: working.exif ?? .emptyObject,
            width: original?.width, height: original?.height,
            source: job.memo.photo, updatesSource: keptPath, annotations: working.annotations)
        input.keepsMemo = job.key.hasPrefix(Self.reprocessKeyPrefix)
        return input
    }

    /// The record's `assets`: every file of the job a stage stored, by role.
    static func assets(_ working: WorkingSet) -> JSONValue {
        var assets: [String: JSONValue] = [:]
        for f in working.files {
            guard let key = f.storedKey else { continue }
            assets[f.role.description] = [
                "key": .string(key), "bytes": f.bytes.map(JSONValue.int) ?? .null, "sha256": f.sha256.map(JSONValue.string) ?? .null,
                "format": f.format.map(JSONValue.string) ?? .null, "width": f.width.map { .int(Int64($0)) } ?? .null,
                "height": f.height.map { .int(Int64($0)) } ?? .null,
            ]
        }
        return .object(assets)
    }

    /// The record written, and its receipt (`source`, `sha256`), which `watch` shows.
    static func outcome(_ written: (record: Record, op: String)) -> StageOutcome {
        var result: [String: JSONValue] = ["record": .string(written.record.id), "op": .string(written.op),
                                           "change_tag": .string(written.record.changeTag)]
        if let source = written.record.source { result["source"] = .string(source) }
        if let sha = written.record.sha256 { result["sha256"] = .string(sha) }
        return .continue(result: .object(result))
    }
}
