import CSQLite
import Glibc
import StageKit

extension Database {
    /// Copies the database at `source` into a new file `destination` with SQLite's online
    /// backup API while other connections keep writing (`photomemo backup`). The source is
    /// read inside one read transaction held for the whole copy: every step sees the same
    /// snapshot (WAL lets writers go on meanwhile), so the copy is one instant of the
    /// database and never restarts because a writer committed. `pagesPerStep` pages at a
    /// time with a short pause between steps, so the copy shares the disk with intake.
    /// `cancelled` is asked between steps.
    public static func onlineBackup(of source: String, to destination: String, pagesPerStep: Int32 = 256,
                                    pauseMicroseconds: UInt32 = 500, cancelled: () -> Bool = { false }) throws {
        let from = try Database(path: source, readOnly: true)
        try from.exec("BEGIN")
        defer { try? from.exec("COMMIT") }
        _ = try from.queryOne("SELECT count(*) FROM sqlite_master", [])  // starts the read transaction: the snapshot
        let to = try Database(path: destination)
        guard let backup = sqlite3_backup_init(to.db, "main", from.db, "main") else {
            throw PhotomemoError(to.lastCode, "cannot back up \(source) to \(destination): \(to.lastError)")
        }
        var rc: Int32
        repeat {
            rc = sqlite3_backup_step(backup, pagesPerStep)
            if cancelled() {
                sqlite3_backup_finish(backup)
                throw PhotomemoError(.notRunning, "backup of \(source) stopped: the daemon is stopping")
            }
            if rc != SQLITE_DONE { usleep(pauseMicroseconds) }
        } while rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED
        let finished = sqlite3_backup_finish(backup)
        guard rc == SQLITE_DONE, finished == SQLITE_OK else {
            throw PhotomemoError(to.lastCode, "backup of \(source) to \(destination) failed: \(String(cString: sqlite3_errstr(rc)))")
        }
        // The copy keeps the source's WAL flag; a rollback journal makes it one file that
        // later readers leave alone (no -wal, no -shm beside it). A daemon sets WAL again.
        try to.exec("PRAGMA journal_mode=DELETE")
    }
}
