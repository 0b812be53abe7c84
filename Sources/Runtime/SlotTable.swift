/// Each stage's concurrency as the scheduler counts it: jobs in flight and the slots
/// (stage runs) taken. Plain values, no loop and no I/O, so its rules are tested alone.
///
/// A slot is taken by a run from dispatch until the run returns: the next job starts while
/// the last one's outcome is written (an fsync), so a stage's cores never wait on it. A
/// job claimed for its next stage before its last outcome was reported holds a slot while
/// parked. A run whose outcome write failed keeps a slot until the write succeeds: while
/// the journal cannot record (but can still claim) a stage holds at most its concurrency
/// of them, instead of claiming and running job after job whose outcomes pile up.
struct SlotTable {
    /// Jobs in flight per stage: running, or their outcome being written.
    private var jobs: [String: Int] = [:]
    /// Runs in progress and parked jobs, per stage.
    private var slots: [String: Int] = [:]
    /// Runs whose outcome write failed and waits to be tried again, per stage.
    private var unwritten: [String: Int] = [:]

    /// Runs started since the daemon started (`FreedMemoryTrimmer` tells quiet from busy).
    private(set) var runsStarted = 0

    var jobCount: Int { jobs.values.reduce(0, +) }

    func jobs(stage: String) -> Int { jobs[stage, default: 0] }

    /// How many more runs `stage` may start now.
    func free(_ stage: String, concurrency: Int) -> Int {
        concurrency - slots[stage, default: 0] - unwritten[stage, default: 0]
    }

    /// A run of `count` jobs starts: it takes a slot.
    mutating func started(_ stage: String, jobs count: Int) {
        jobs[stage, default: 0] += count
        slots[stage, default: 0] += 1
        runsStarted += 1
    }

    /// A run returned (its outcome is being written): its slot is free.
    mutating func returned(_ stage: String) { slots[stage, default: 1] -= 1 }

    /// A job parked for `stage` holds a slot of it until it runs or goes back.
    mutating func park(_ stage: String) { slots[stage, default: 0] += 1 }
    mutating func unpark(_ stage: String) { slots[stage, default: 1] -= 1 }

    /// A run's outcome write failed the first time: it holds a slot until written.
    mutating func writeFailed(_ stage: String) { unwritten[stage, default: 0] += 1 }
    /// A write that had failed is done (written, or given up while stopping).
    mutating func writeSettled(_ stage: String) { unwritten[stage, default: 1] -= 1 }

    /// A run's jobs are recorded: no longer in flight.
    mutating func ended(_ stage: String, jobs count: Int) { jobs[stage, default: count] -= count }
}
