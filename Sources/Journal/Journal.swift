import Foundation
import StageKit
import SQLite

/// The durable record of every job, on SQLite (WAL, `synchronous=FULL`: a committed job
/// survives a crash or power loss) or on PostgreSQL shared by several daemons (each with
/// its `host` and leases). One connection behind a lock; every method is one transaction
/// (or one statement) and is called off the loop thread.
///
/// Intake commits the queue read position in the same transaction as the jobs it
/// produced, and marks inbox files as taken with their job, so a crash at any instant
/// re-reads (and deduplicates) instead of losing.
public final class Journal: @unchecked Sendable {
    // Safe: `db` is only touched with `lock` held.
    private let db: any SQLConnection
    private let lock = NSLock()
    /// SQLite: the connection is at `synchronous=NORMAL`, left so by a claim (`write`).
    private var relaxed = false
    public let path: String
    /// This daemon among several on one database (PostgreSQL); '' on SQLite, where one
    /// daemon owns the file. Its photo stages run only jobs whose photo it took.
    public let host: String
    /// How long a claim holds a job before another host may take it again (the running
    /// host renews it); nil on SQLite, where a restart resumes what was running.
    public let leaseSeconds: Double?
    private let writeHealth = JournalWriteHealth()
    /// Write transactions committed so far, and of them those that waited for the disk
    /// (SQLite's fsync of the WAL; PostgreSQL's WAL flush): the metrics' journal counters.
    private let commits = LockedValue(JournalCommits())
    public var committed: JournalCommits { commits.value }
    /// Nil while writes commit; since when and why they fail (`status` shows it).
    public var writeFailure: JournalWriteFailure? { writeHealth.current }

    public convenience init(path: String) throws {
        let db = try Database(path: path)
        try db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")
        try self.init(connection: db, path: path)
    }

    /// The journal on an open connection (its schema made or migrated here); `path` names
    /// it in messages.
    public init(connection db: any SQLConnection, path: String, host: String = "", leaseSeconds: Double? = nil) throws {
        self.path = path
        self.host = host
        self.leaseSeconds = leaseSeconds
        try db.migrate(db.dialect == .postgres ? Schema.postgresMigrations : Schema.migrations,
                       versionTable: "schema_version", what: "journal")
        self.db = db
    }

    /// One write transaction. PostgreSQL: several daemons write one journal; one writer at
    /// a time keeps intake, joins and outcomes as simple as on SQLite (BEGIN IMMEDIATE).
    /// `durable: false`: the commit does not wait for the WAL's fsync (SQLite:
    /// `synchronous=NORMAL`, which still syncs checkpoints: OFF would not, and a power loss
    /// could then undo durable commits too; PostgreSQL: `synchronous_commit` off for this
    /// transaction). It survives the daemon's own crash (it is in the kernel's cache), and
    /// the next durable commit flushes it with its own; only a power loss (or the server's
    /// crash) before that can undo it. A durable write sets FULL again first, or fails.
    @discardableResult
    func write<T>(durable: Bool = true, _ body: (any SQLConnection) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        do {
            if db.dialect == .sqlite, relaxed == durable {
                try db.exec(durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL")
                relaxed = !durable
            }
            let result = try db.transaction {
                if db.dialect == .postgres {
                    try db.run("SELECT pg_advisory_xact_lock(hashtext('photomemo:journal'))")
                    if !durable { try db.run("SET LOCAL synchronous_commit = off") }
                }
                return try body(db)
            }
            writeHealth.succeeded()
            commits.withLock { $0.transactions += 1; if durable { $0.durable += 1 } }
            return result
        } catch {
            writeHealth.failed(error)
            throw error
        }
    }

    /// One statement that is atomic by itself (a PostgreSQL claim whose row locks are
    /// enough), outside the journal lock. Its failure is the journal's, but its success
    /// proves little (a claim of nothing writes nothing): only `write` clears a failure.
    func statement<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        do { return try read(body) } catch {
            writeHealth.failed(error)
            throw error
        }
    }

    var dialect: SQLDialect { db.dialect }

    func read<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(db)
    }

    /// On a shared database, tells the other daemons (at COMMIT) that jobs became
    /// runnable, so an idle one claims at once instead of at its next timer.
    func announceWork(_ db: any SQLConnection) throws {
        if db.dialect == .postgres { try db.run("SELECT pg_notify('photomemo_work', ?)", [.text(host)]) }
    }

    // MARK: settings

    public func setting(_ key: String) throws -> String? {
        try read { try $0.queryOne("SELECT value FROM meta WHERE key = ?", [.text(key)])?.string(0) }
    }

    public func setSetting(_ key: String, _ value: String?) throws {
        try write { db in
            if let value {
                try db.run("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           [.text(key), .text(value)])
            } else {
                try db.run("DELETE FROM meta WHERE key = ?", [.text(key)])
            }
        }
    }

    // MARK: events

    func event(_ db: any SQLConnection, job: Int64, stage: String?, attempt: Int?, _ event: String,
               durationMs: Double? = nil, message: String? = nil, at now: Double) throws {
        try db.run("INSERT INTO job_events(job_id, at, stage, attempt, event, duration_ms, message, host) VALUES (?,?,?,?,?,?,?,?)",
                   [.int(job), .double(now), SQLValue(stage), SQLValue(attempt.map(Int64.init)), .text(event),
                    SQLValue(durationMs), SQLValue(message), .text(host)])
    }

    /// Inserts a job row and its first event; returns its id.
    func insertJob(_ db: any SQLConnection, key: String?, origin: String, photo: String?, photoPath: String?, sha256: String?,
                   memo: MemoJob, state: JobState, waitReason: String? = nil, readyAt: Double?, deadline: Double? = nil,
                   duplicateOf: Int64? = nil, error: String? = nil, source: String?, now: Double) throws -> Int64 {
        let finished = (state == .done || state == .failed) ? now : nil
        let turn = state == .queued || state == .waiting ? try nextTurn(db, owner: memo.owner) : 0
        let id = try db.queryOne("""
            INSERT INTO jobs(key, origin, photo, photo_path, photo_sha256, memo, state, wait_reason, ready_at, deadline,
                             duplicate_of, error, source, created, updated, finished, owner, host, turn)
            VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id
            """, [SQLValue(key), .text(origin), SQLValue(photo), SQLValue(photoPath), SQLValue(sha256),
                  .text(memo.json.jsonString), .text(state.rawValue), SQLValue(waitReason), SQLValue(readyAt),
                  SQLValue(deadline), SQLValue(duplicateOf), SQLValue(error), SQLValue(source), .double(now), .double(now),
                  SQLValue(finished), SQLValue(memo.owner), .text(host), .int(turn)])!.int(0)!
        var message = source.map { "from \($0)" }
        if let duplicateOf { message = "duplicate of job \(duplicateOf)" }
        if let error { message = error }
        try event(db, job: id, stage: nil, attempt: nil, "accepted", message: message, at: now)
        if state != .queued && state != .running {
            try event(db, job: id, stage: nil, attempt: nil, state.rawValue, message: waitReason.map { "waiting for \($0)" } ?? error, at: now)
        }
        return id
    }

    // MARK: reading jobs

    static let summaryColumns = "id, key, state, stage, attempts, photo, duplicate_of, error, quarantine, memo, results, error_code"
    /// The same for a list, which shows no results: not read, nor parsed.
    static let listColumns = "id, key, state, stage, attempts, photo, duplicate_of, error, quarantine, memo, '{}', error_code"

    static func summary(_ r: Row) throws -> JobSummary {
        JobSummary(id: r.int(0)!, key: r.string(1), state: JobState(rawValue: r.string(2)!) ?? .failed,
                   stage: r.string(3), attempts: Int(r.int(4) ?? 0), photo: r.string(5), duplicateOf: r.int(6),
                   error: r.string(7), errorCode: r.string(11), quarantine: r.string(8),
                   memo: try MemoJob(json: JSONValue.parse(r.string(9)!)), results: try JSONValue.parse(r.string(10)!))
    }

    public func job(_ id: Int64) throws -> JobSummary? {
        try read { db in
            try db.queryOne("SELECT \(Self.summaryColumns) FROM jobs WHERE id = ? AND pruned IS NULL", [.int(id)]).map(Self.summary)
        }
    }

    public func jobs(state: JobState? = nil, limit: Int = 100) throws -> [JobSummary] {
        try read { db in
            if let state {
                return try db.query("SELECT \(Self.summaryColumns) FROM jobs WHERE state = ? AND pruned IS NULL ORDER BY id LIMIT ?",
                                    [.text(state.rawValue), .int(Int64(limit))]).map(Self.summary)
            }
            return try db.query("SELECT \(Self.summaryColumns) FROM jobs WHERE pruned IS NULL ORDER BY id LIMIT ?", [.int(Int64(limit))]).map(Self.summary)
        }
    }

    /// Jobs the journal holds per state (not those pruned: `prunedCounts`).
    public func counts() throws -> [JobState: Int] {
        try read { db in
            var out: [JobState: Int] = [:]
            for s in JobState.allCases { out[s] = 0 }
            for r in try db.query("SELECT state, count(*) FROM jobs WHERE pruned IS NULL GROUP BY state") {
                if let s = JobState(rawValue: r.string(0)!) { out[s] = Int(r.int(1)!) }
            }
            return out
        }
    }

    /// A job's history, oldest first.
    public func history(_ id: Int64) throws -> [(event: String, at: Double, stage: String?, attempt: Int?, durationMs: Double?, message: String?)] {
        try read { db in
            try db.query("SELECT event, at, stage, attempt, duration_ms, message FROM job_events WHERE job_id = ? ORDER BY id", [.int(id)])
                .map { ($0.string(0)!, $0.double(1)!, $0.string(2), $0.int(3).map(Int.init), $0.double(4), $0.string(5)) }
        }
    }
}
