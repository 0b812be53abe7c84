import StageKit
import SQLite

/// Writing what a batch of stage runs decided (`recordSteps`): every job's current row is
/// read, each step becomes a row of one update per kind of step (advance, finish, retry,
/// wait, fail) plus its events, and each statement is written once for both engines over
/// a row source (`RowSource`). On PostgreSQL that is one statement per kind for the whole
/// batch, since round trips are what it pays for: a batch of 64 advances was ~200 round
/// trips under the journal lock, now 5. On SQLite, in process, it is a statement per row.
extension Journal {
    /// A stage run's steps, one per job (one, or a batch), as the scheduler decided them
    /// (`JobStateMachine`), in one transaction (one fsync for the batch); says what
    /// happened to each job. A job done in a batch says so in its event (`photomemo job
    /// ID` shows it; the duration is the batch's).
    public func recordSteps(_ runs: [(job: ClaimedJob, step: JobStep)], stageName: String, durationMs: Double,
                            now: Double = unixNow()) throws -> [Transition] {
        try recordOutcomes([StageRunSteps(steps: runs, stageName: stageName, durationMs: durationMs)], thenClaim: [], now: now)
            .transitions[0]
    }

    /// Several stage runs' steps in one transaction (group commit: one fsync for the runs
    /// that returned while the last write was in flight), then in the same transaction
    /// the claims the scheduler has room for (`Journal+OutcomeClaims`). Durable unless
    /// every run says it need not be (`StageRunSteps.durable`).
    public func recordOutcomes(_ runs: [StageRunSteps], thenClaim claims: [ClaimRequest], photoLocalEnd: Int = .max,
                               now: Double = unixNow()) throws -> RecordedOutcomes {
        try write(durable: runs.isEmpty || runs.contains(where: \.durable)) { db in
            let transitions = try writeSteps(db, runs, now: now)
            let claimed = try claimAfterOutcomes(db, claims, photoLocalEnd: photoLocalEnd, now: now)
            return RecordedOutcomes(transitions: transitions, claimed: claimed)
        }
    }

    /// Each run's transitions, in the order of `runs` and of their jobs.
    private func writeSteps(_ db: any SQLConnection, _ runs: [StageRunSteps], now: Double) throws -> [[Transition]] {
        let ids = runs.flatMap { $0.steps.map { [SQLValue.int($0.job.context.id)] } }
        let current = try RowSource.query(db, "SELECT j.id, j.state, j.photo_path, j.results, j.lease_host, j.stage_index, j.attempts FROM jobs j JOIN",
                                          columns: [("id", "bigint")], rows: ids, "ON j.id = v.id")
        var byID: [Int64: Row] = [:]
        for r in current { byID[r.int(0)!] = r }
        var writes = OutcomeWrites()
        var all: [[Transition]] = []
        for run in runs {
            var done: [Transition] = []
            for (job, step) in run.steps {
                let id = job.context.id
                // Cancelled, or reclaimed after this run's lease ran out (by another host, or
                // by this one: a reclaim spends an attempt, so the claim this run came from
                // is `attempts + 1`), while the stage ran, or already past this stage (a
                // retried write whose first try committed): keep what is there.
                guard let row = byID[id], row.string(1) == "running", row.string(4) == host, row.int(5) == Int64(job.stageIndex),
                      row.int(6).map({ Int($0) + 1 }) == job.context.attempt else {
                    done.append(Transition(kind: .abandoned, quarantinePhoto: nil))
                    continue
                }
                writes.event(id, stage: run.stageName, attempt: job.context.attempt, step.event, durationMs: run.durationMs, message: step.message)
                done.append(try writes.add(step, job: id, results: row.string(3)!, photoPath: row.string(2), stageName: run.stageName, now: now))
            }
            all.append(done)
        }
        try writes.write(db, host: host, now: now)
        if all.joined().contains(where: { if case .advanced = $0.kind { true } else { false } }) { try announceWork(db) }
        return all
    }
}

/// The rows a batch writes, by statement.
struct OutcomeWrites {
    /// One kind of step: the SET clause (over `v`, the row source, with `?` for `now`).
    struct Update {
        let set: String
        let nows: Int
        let columns: [(String, String)]
        var rows: [[SQLValue]] = []
    }

    var advance = Update(set: """
        state = 'queued', stage_index = v.next, stage = NULL, attempts = 0, outages = 0, crashes = 0, ready_at = ?,
        results = v.results, working_set = COALESCE(v.working_set, jobs.working_set), error = NULL, error_code = NULL, updated = ?
        """, nows: 2, columns: [("id", "bigint"), ("next", "int"), ("results", "text"), ("working_set", "text")])
    var finish = Update(set: """
        state = 'done', stage = NULL, stage_index = stage_index + 1, results = v.results,
        working_set = COALESCE(v.working_set, jobs.working_set), error = NULL, error_code = NULL, updated = ?, finished = ?
        """, nows: 2, columns: [("id", "bigint"), ("results", "text"), ("working_set", "text")])
    var retry = Update(set: """
        state = 'waiting', wait_reason = 'backoff', attempts = v.attempts, ready_at = v.ready_at, error = v.error,
        error_code = v.error_code, updated = ?
        """, nows: 1, columns: [("id", "bigint"), ("attempts", "int"), ("ready_at", "float8"), ("error", "text"), ("error_code", "text")])
    var wait = Update(set: """
        state = 'waiting', wait_reason = 'dependency', outages = v.outages, ready_at = v.ready_at, error = v.error,
        error_code = v.error_code, updated = ?
        """, nows: 1, columns: [("id", "bigint"), ("outages", "int"), ("ready_at", "float8"), ("error", "text"), ("error_code", "text")])
    var fail = Update(set: """
        state = 'failed', error = v.error, error_code = v.error_code, quarantine = CASE WHEN photo_path IS NULL THEN NULL ELSE 'pending' END,
        attempts = v.attempts, updated = ?, finished = ?
        """, nows: 2, columns: [("id", "bigint"), ("error", "text"), ("error_code", "text"), ("attempts", "int")])
    var events: [[SQLValue]] = []

    static let eventColumns = [("job_id", "bigint"), ("stage", "text"), ("attempt", "int"), ("event", "text"),
                               ("duration_ms", "float8"), ("message", "text")]

    mutating func event(_ job: Int64, stage: String?, attempt: Int?, _ event: String, durationMs: Double? = nil, message: String? = nil) {
        events.append([.int(job), SQLValue(stage), SQLValue(attempt.map(Int64.init)), .text(event), SQLValue(durationMs), SQLValue(message)])
    }

    /// `results`: the job's results as stored, to which this stage's result is added.
    mutating func add(_ step: JobStep, job id: Int64, results stored: String, photoPath: String?, stageName: String,
                      now: Double) throws -> Transition {
        func merged() throws -> SQLValue {
            var results = try JSONValue.parse(stored).objectValue ?? [:]
            if let r = step.result { results[stageName] = r }
            return .text(JSONValue.object(results).jsonString)
        }
        // The working set the run left (continue), or NULL: the journal keeps its own.
        let working = SQLValue(step.workingSet?.json.jsonString)
        switch step.next {
        case .advance(let next):
            advance.rows.append([.int(id), .int(Int64(next)), try merged(), working])
            return Transition(kind: .advanced(toStage: next), quarantinePhoto: nil)
        case .finish:
            finish.rows.append([.int(id), try merged(), working])
            event(id, stage: nil, attempt: nil, "finished")
            return Transition(kind: .finished, quarantinePhoto: nil)
        case .retry(let delay, let attempts, let error):
            retry.rows.append([.int(id), .int(Int64(attempts)), .double(now + Double(delay) / 1000), .text(error.message), .text(error.code.rawValue)])
            return Transition(kind: .retrying(afterMs: delay), quarantinePhoto: nil)
        case .waitForDependency(let delay, let outages, let error):
            wait.rows.append([.int(id), .int(Int64(outages)), .double(now + Double(delay) / 1000), .text(error.message), .text(error.code.rawValue)])
            return Transition(kind: .waitingForDependency(afterMs: delay), quarantinePhoto: nil)
        case .fail(let error, let attempts):
            fail.rows.append([.int(id), .text(error.message), .text(error.code.rawValue), .int(Int64(attempts))])
            return Transition(kind: .failed(error), quarantinePhoto: photoPath)
        }
    }

    /// Events first, in order (the step's, then `finished`), then the updates.
    func write(_ db: any SQLConnection, host: String, now: Double) throws {
        try RowSource.run(db, """
            INSERT INTO job_events(job_id, at, stage, attempt, event, duration_ms, message, host)
            SELECT v.job_id, ?, v.stage, v.attempt, v.event, v.duration_ms, v.message, ? FROM
            """, before: [.double(now), .text(host)], columns: Self.eventColumns, rows: events, "ORDER BY v.n")
        for u in [advance, finish, retry, wait, fail] where !u.rows.isEmpty {
            try RowSource.run(db, "UPDATE jobs SET \(u.set) FROM", before: Array(repeating: .double(now), count: u.nows),
                              columns: u.columns, rows: u.rows, "WHERE jobs.id = v.id")
        }
    }
}
