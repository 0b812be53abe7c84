import StageKit

/// The job definition in force: one value for the whole daemon, swapped on reload in one
/// place (`replace`). What intake reads on the lane off the loop (join timeout, max bytes,
/// the inbox section, originals, quota) are cells of this value, set only here, so no
/// reader keeps a copy of its own that a reload could miss.
///
/// Everyone reads it: the scheduler at each claim and outcome (`Scheduler.definition`;
/// told of a swap only to move waiting jobs off stages that are gone), intake, the inbox
/// scanner, quarantine, the quota meter, the lease keeper and the deliverer's retry
/// policy. A stage run keeps the definition it started with. Only the process-wide decode
/// budget (`DecodeMemory`) is set from it by the daemon builder after a swap.
final class LiveDefinition: Sendable {
    private let cell: LockedValue<JobDefinition>
    /// `join_timeout_seconds`: how long a memo waits for its photo.
    let joinTimeoutSeconds: LockedValue<Int>
    /// The stages' `max_bytes`: a bigger photo is refused unread.
    let maxPhotoBytes: LockedValue<Int64?>
    /// `JobDefinition.memoStage`: a memo joins its photo's job only while it is before it.
    let memoStage: LockedValue<Int>
    /// The `inbox` section (ignore globs, stale temp files, quiet time).
    let inbox: LockedValue<InboxOptions>
    /// `inbox.originals`: whether inbox files stay where they are.
    let originals: LockedValue<InboxOptions.Originals>
    /// `quota`: per-user limits (`QuotaMeter`).
    let quota: LockedValue<Quota>

    init(_ definition: JobDefinition) {
        cell = LockedValue(definition)
        joinTimeoutSeconds = LockedValue(definition.joinTimeoutSeconds)
        maxPhotoBytes = LockedValue(definition.maxPhotoBytes)
        memoStage = LockedValue(definition.memoStage)
        inbox = LockedValue(definition.inbox)
        originals = LockedValue(definition.inbox.originalsMode)
        quota = LockedValue(definition.quota)
    }

    var current: JobDefinition { cell.value }

    /// Swaps in `next` if it may be swapped in: the database and the store are opened once,
    /// at start, so a definition naming others is refused and the current one stays.
    func replace(with next: JobDefinition) throws {
        let now = current
        guard next.database == now.database, next.store == now.store else {
            throw PhotomemoError(.badDefinition, "\(next.source): the database and the store are opened once, at start; restart photomemo to change them")
        }
        joinTimeoutSeconds.value = next.joinTimeoutSeconds
        maxPhotoBytes.value = next.maxPhotoBytes
        memoStage.value = next.memoStage
        originals.value = next.inbox.originalsMode
        inbox.value = next.inbox
        quota.value = next.quota
        cell.value = next
    }
}
