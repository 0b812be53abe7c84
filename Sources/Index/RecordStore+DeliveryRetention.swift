import SQLite

/// Deliveries finished long ago (Running for months): a delivered or failed row is kept as
/// long as a finished job is (the definition's `retention.done` and `.failed`), then
/// deleted, so the table holds what is pending and recent history, not one row per change
/// and subscription forever. A change already fanned out is never fanned out again, so a
/// pruned row does not come back.
extension RecordStore {
    /// Deletes up to `limit` delivered rows last tried before `deliveredBefore` and failed
    /// rows last tried before `failedBefore` (by `next_at`: the time of the row's last
    /// attempt, indexed with its state); returns how many went.
    public func pruneDeliveries(deliveredBefore: Double, failedBefore: Double, limit: Int) throws -> Int {
        try writing {
            try db.run("""
                DELETE FROM deliveries WHERE id IN (
                    SELECT id FROM deliveries WHERE state = 'delivered' AND next_at < ?
                    UNION ALL
                    SELECT id FROM deliveries WHERE state = 'failed' AND next_at < ?
                    LIMIT ?)
                """, [.double(deliveredBefore), .double(failedBefore), .int(Int64(limit))])
        }
    }
}
