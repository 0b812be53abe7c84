import Index
import Journal
import PhotomemoCore
import StageKit

/// Per-user quotas (the definition's `"quota"`), measured when something asks to come in:
/// a user's records and the unfinished jobs adding one against `records`; their records' asset bytes
/// and their stale temporary files in the inbox against `bytes`. Admins have no quota.
/// Read on the intake lane and the work pool; limits are the live definition's (swapped on
/// reload), stale bytes set after each inbox rescan.
final class QuotaMeter: Sendable {
    let limits: LockedValue<Quota>
    /// Bytes of each owner's stale files under ignored inbox names (`inbox.stale_temp`).
    let staleBytes = LockedValue<[String: Int64]>([:])
    private let records: any RecordIndex
    private let journal: any JobIntake
    /// The live definition's `recordStage`: unfinished jobs past it have their record.
    private let recordStage: @Sendable () -> Int

    /// `limits`: the daemon's `LiveDefinition.quota`.
    init(limits: LockedValue<Quota>, records: any RecordIndex, journal: any JobIntake, recordStage: @escaping @Sendable () -> Int) {
        self.limits = limits
        self.records = records
        self.journal = journal
        self.recordStage = recordStage
    }

    /// What one user has and may still add, as measured now; refusals name what counts.
    struct Allowance: Sendable {
        let owner: String
        let limits: Quota
        let records: Int
        let bytes: Int64
        private(set) var taken = 0
        private(set) var takenBytes: Int64 = 0

        /// Counts one more job (of `bytes`, an inbox photo's size) if the quota allows it;
        /// else the `over_quota` error saying why.
        mutating func take(bytes more: Int64 = 0) -> PhotomemoError? {
            if let max = limits.records, records + taken >= max {
                return PhotomemoError(.overQuota, "\(owner) is at their quota of \(max) records (their records and jobs adding one: \(records + taken)); delete records with --purge (the trash keeps counting them) to add more")
            }
            let used = bytes.addingSaturated(takenBytes)
            if let max = limits.bytes, used.addingSaturated(more) > max || (more == 0 && used >= max) {
                let what = more > 0 ? "a photo of \(more) bytes would take \(owner) past" : "\(owner) is at"
                return PhotomemoError(.overQuota, "\(what) their quota of \(max) bytes (\(used) used by their records' assets and stale files in the inbox)")
            }
            taken += 1
            takenBytes = takenBytes.addingSaturated(more)
            return nil
        }
    }

    /// `owner`'s allowance now; nil when they have no quota (an admin, or none is set).
    func allowance(owner: String, uid: UInt32) throws -> Allowance? {
        let limits = self.limits.value
        guard limits.isSet, !UnixUser.isAdmin(uid: uid) else { return nil }
        let (records, bytes) = try usage(owner: owner, limits: limits)
        return Allowance(owner: owner, limits: limits, records: records, bytes: bytes)
    }

    /// Records (with the unfinished jobs that will add one) and bytes `owner` counts against a quota.
    func usage(owner: String, limits: Quota? = nil) throws -> (records: Int, bytes: Int64) {
        let stored = try records.usage(owner: owner)
        let open = try journal.jobsBeforeTheirRecord(owner: owner, recordStage: recordStage(),
                                                     limit: (limits ?? self.limits.value).records.map { $0 + 1 } ?? .max)
        return (stored.records + open, stored.bytes.addingSaturated(staleBytes.value[owner] ?? 0))
    }

    /// The bytes of an inbox walk's stale files, by owner.
    func noteStale(_ byOwner: [String: Int64]) {
        staleBytes.value = byOwner
    }
}
