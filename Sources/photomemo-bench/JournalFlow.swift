import Foundation
import Journal
import StageKit

/// A photo job's journal traffic as the daemon makes it on a lightly loaded host: intake,
/// then per stage one claim and one record (batches of 1, the most transactions a photo
/// can cost). Run against a fresh database; its pg_stat deltas over `photos` are the
/// journal's share of the database writes per photo.
enum JournalFlow {
    static let stages = ["validate", "compress", "upload", "index"]

    static func run(_ journal: Journal, photos: Int) throws {
        let taken = (0..<photos).map { i in
            TakenPhoto(name: "photo-\(i).jpg", path: "/inbox/photo-\(i).jpg", identity: "1:\(i):4400000:0",
                       sha256: String(repeating: "0", count: 58) + String(format: "%06d", i))
        }
        for t in taken { _ = try journal.commitPhotos([t]) }
        for (index, name) in stages.enumerated() {
            while case let claimed = try journal.claim(stageIndex: index, stageName: name, limit: 1), !claimed.isEmpty {
                let runs = claimed.map { ($0, StageOutcome.continue()) }
                _ = try journal.recordSteps(JobStateMachine.steps(runs, stageCount: stages.count, retry: .default),
                                            stageName: name, durationMs: 1)
            }
        }
    }
}
