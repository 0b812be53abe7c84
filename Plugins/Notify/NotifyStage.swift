import Foundation
import Index
import StageKit

/// `notify`: fans the job's record change out to the matching subscriptions, committing
/// one delivery per subscription in the record index (the durable outbox); the daemon
/// delivers them. A slow webhook never holds the job: it is done once the deliveries are
/// queued.
public struct NotifyStage: Stage {
    public static let name = "notify"
    public static let summary = "queues the record change for every matching subscription (webhook, exec, socket)"
    public static let workload = StageWorkload.io
    public static let options: [StageOption] = [
        StageOption("index", .string, "the record index whose changes to fan out (as the index stage's); default: the job definition's \"database\""),
    ]

    let store: any RecordIndex

    public init(options: StageOptions, environment: StageEnvironment) throws {
        store = try environment.recordIndex(options.string("index"))
    }

    public func run(_ job: JobContext) -> StageOutcome {
        do {
            return .continue(result: ["deliveries": .int(Int64(try store.fanOutPending()))])
        } catch {
            return StageOutcome(catching: error, dependency: StageEnvironment.recordIndexDependency, otherwise: { .retry(.of($0, or: .io), "notify: \($0)") })
        }
    }
}
