import StageKit
import SQLite

/// The intake ledger (`inbox_taken`) may mark an inbox file taken only for bytes a job
/// stores. A file taken as a duplicate of a job that then ends without storing its photo
/// (failed, cancelled) is stored by nobody: its row goes, and the inbox takes it again.
/// A photo renamed a→b→a within milliseconds was taken as `b`, then as `a` — a duplicate
/// of the `b` job, which then failed "photo file is gone": the file stayed in the inbox
/// with no record, and no rescan ever took it again (issue 24).
extension Journal {
    /// After job `job` ended without storing its photo. `photoGone`: its own file was not
    /// there (renamed away, maybe to come back): its row goes too, so the file is taken
    /// again under that name. Returns the names released on this host, to look at now.
    public func untake(endedJob job: Int64, photoGone: Bool, now: Double = unixNow()) throws -> [String] {
        try write { db in try self.untake(db, endedJob: job, photoGone: photoGone, now: now) }
    }

    func untake(_ db: any SQLConnection, endedJob job: Int64, photoGone: Bool, now: Double) throws -> [String] {
        // Rows by job, on any host: a duplicate may have been taken by another daemon.
        let which = photoGone ? "(d.duplicate_of = ? OR d.id = ?)" : "d.duplicate_of = ?"
        let rows = try db.query("SELECT t.host, t.name, t.job_id FROM inbox_taken t JOIN jobs d ON d.id = t.job_id WHERE \(which)",
                                photoGone ? [.int(job), .int(job)] : [.int(job)])
        var names: [String] = []
        for r in rows {
            let (rowHost, name, owner) = (r.string(0)!, r.string(1)!, r.int(2)!)
            try db.run("DELETE FROM inbox_taken WHERE host = ? AND name = ? AND job_id = ?", [.text(rowHost), .text(name), .int(owner)])
            if owner != job {
                try event(db, job: owner, stage: nil, attempt: nil, "untaken",
                          message: "job \(job) ended without storing these bytes: \(name) is taken again", at: now)
            }
            if rowHost == host { names.append(name) }
        }
        return names
    }
}
