/// Sums of sizes that users' files claim, held at the type's bound instead of trapping: a
/// sparse file may claim 2^62 bytes (tmpfs, XFS, btrfs), and two such stale files in an
/// inbox, or two queue files, overflowed Int64 and took the daemon down (attack review,
/// 2026-12-04).
extension FixedWidthInteger {
    public func addingSaturated(_ other: Self) -> Self {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}

extension Sequence {
    /// The sum of `value` over the elements, saturating (`addingSaturated`).
    public func saturatedSum<T: FixedWidthInteger>(_ value: (Element) -> T) -> T {
        reduce(0) { $0.addingSaturated(value($1)) }
    }
}
