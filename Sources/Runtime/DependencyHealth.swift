/// Which dependencies are down, as stage runs and the journal report them (`status` and
/// `metrics` show it). A dependency a stage found unreachable is up again once a run of
/// that stage goes through. Plain values: no loop, no I/O.
struct DependencyHealth {
    /// Every dependency reported so far, and whether it answers now.
    private(set) var up: [String: Bool] = [:]
    /// The dependencies each stage found down.
    private var usedBy: [String: Set<String>] = [:]
    /// Why each dependency that is down is (the stage's last reason), for `status`.
    private(set) var reasons: [String: String] = [:]

    /// The journal's writes, reported by the scheduler itself.
    static let journal = "journal"

    func isDown(_ dependency: String) -> Bool { up[dependency] == false }

    mutating func down(_ dependency: String, reportedBy stage: String? = nil, reason: String? = nil) {
        if let stage { usedBy[stage, default: []].insert(dependency) }
        up[dependency] = false
        reasons[dependency] = reason
    }

    /// Marks `dependency` up; true if it was down (the caller says so once).
    mutating func answers(_ dependency: String) -> Bool {
        guard up[dependency] == false else { return false }
        up[dependency] = true
        reasons[dependency] = nil
        return true
    }

    /// A run of `stage` went through: the dependencies it had found down answer again.
    /// Returns those, sorted, to be logged.
    mutating func wentThrough(_ stage: String) -> [String] {
        (usedBy[stage] ?? []).sorted().filter { answers($0) }
    }
}
