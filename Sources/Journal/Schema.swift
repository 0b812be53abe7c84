/// The journal's schema, versioned: migration N brings a database from version N-1 to N.
/// Never edit a shipped migration; append a new one.
enum Schema {
    static let migrations: [String] = [
        // 1: jobs, their history, the queue read position, inbox files taken, settings.
        """
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE jobs(
            id INTEGER PRIMARY KEY,
            key TEXT UNIQUE,
            origin TEXT NOT NULL,
            photo TEXT,
            photo_path TEXT,
            photo_sha256 TEXT,
            memo TEXT NOT NULL,
            state TEXT NOT NULL,
            wait_reason TEXT,
            stage TEXT,
            stage_index INTEGER NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 0,
            outages INTEGER NOT NULL DEFAULT 0,
            ready_at REAL,
            deadline REAL,
            duplicate_of INTEGER REFERENCES jobs(id),
            error TEXT,
            results TEXT NOT NULL DEFAULT '{}',
            quarantine TEXT,
            source TEXT,
            created REAL NOT NULL,
            updated REAL NOT NULL,
            finished REAL
        );
        CREATE INDEX jobs_ready ON jobs(stage_index, ready_at) WHERE ready_at IS NOT NULL;
        CREATE INDEX jobs_waiting ON jobs(ready_at) WHERE state = 'waiting';
        CREATE INDEX jobs_deadline ON jobs(deadline) WHERE deadline IS NOT NULL;
        CREATE INDEX jobs_photo ON jobs(photo) WHERE photo IS NOT NULL;
        CREATE INDEX jobs_sha ON jobs(photo_sha256) WHERE photo_sha256 IS NOT NULL;
        CREATE INDEX jobs_state ON jobs(state);
        CREATE TABLE job_events(
            id INTEGER PRIMARY KEY,
            job_id INTEGER NOT NULL REFERENCES jobs(id),
            at REAL NOT NULL,
            stage TEXT,
            attempt INTEGER,
            event TEXT NOT NULL,
            duration_ms REAL,
            message TEXT
        );
        CREATE INDEX job_events_job ON job_events(job_id);
        CREATE INDEX job_events_stage ON job_events(stage, event, id) WHERE stage IS NOT NULL;
        CREATE INDEX job_events_finished ON job_events(at) WHERE event = 'finished';
        CREATE TABLE queue_position(
            id INTEGER PRIMARY KEY CHECK (id = 1),
            inode INTEGER NOT NULL,
            offset INTEGER NOT NULL,
            line INTEGER NOT NULL
        );
        CREATE TABLE inbox_taken(
            name TEXT PRIMARY KEY,
            identity TEXT NOT NULL,
            job_id INTEGER NOT NULL REFERENCES jobs(id)
        );
        """,
        // 2: jobs know their owner (a user sees and acts on their own jobs only) and when
        // their photo's record was deleted (the same bytes dropped again are new); one read
        // position per queue file (queue.jsonl and queue.d/*.jsonl), with a generation
        // that grows at every truncation or replacement and a fingerprint of the bytes
        // before the offset, so a file rewritten to the same size is noticed.
        """
        ALTER TABLE jobs ADD COLUMN owner TEXT;
        ALTER TABLE jobs ADD COLUMN record_deleted REAL;
        UPDATE jobs SET owner = json_extract(memo, '$.owner');
        CREATE INDEX jobs_owner ON jobs(owner, id);
        CREATE TABLE queue_files(
            name TEXT PRIMARY KEY,
            inode INTEGER NOT NULL,
            generation INTEGER NOT NULL,
            offset INTEGER NOT NULL,
            line INTEGER NOT NULL,
            tail TEXT
        );
        INSERT INTO queue_files(name, inode, generation, offset, line)
            SELECT 'queue.jsonl', inode, 0, offset, line FROM queue_position;
        DROP TABLE queue_position;
        """,
        // 3: how many times the daemon died of a fatal signal while the job's current stage
        // ran (reset when the job moves on or is retried): twice fails it, and a job that
        // crashed once runs alone, so a crash names it and no bystander.
        // A memo that arrives once its photo's job has begun writing the record is a job of
        // its own that updates the record: it runs after that job (`after_job`) ends.
        """
        ALTER TABLE jobs ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE jobs ADD COLUMN after_job INTEGER REFERENCES jobs(id);
        CREATE INDEX jobs_crashed ON jobs(stage_index) WHERE crashes > 0;
        """,
        // 4: several daemons on one database (PostgreSQL): a job's photo is on the host
        // that took it (`host`), and a running job is leased by the host running it until
        // `lease_until`; queue read positions and inbox files taken are per host. On
        // SQLite the host is always '' and nothing is leased.
        """
        ALTER TABLE jobs ADD COLUMN host TEXT NOT NULL DEFAULT '';
        ALTER TABLE jobs ADD COLUMN lease_host TEXT NOT NULL DEFAULT '';
        ALTER TABLE jobs ADD COLUMN lease_until REAL;
        CREATE TABLE queue_files_by_host(
            host TEXT NOT NULL DEFAULT '',
            name TEXT NOT NULL,
            inode INTEGER NOT NULL,
            generation INTEGER NOT NULL,
            "offset" INTEGER NOT NULL,
            line INTEGER NOT NULL,
            tail TEXT,
            PRIMARY KEY(host, name)
        );
        INSERT INTO queue_files_by_host(name, inode, generation, "offset", line, tail)
            SELECT name, inode, generation, "offset", line, tail FROM queue_files;
        DROP TABLE queue_files;
        ALTER TABLE queue_files_by_host RENAME TO queue_files;
        CREATE TABLE inbox_taken_by_host(
            host TEXT NOT NULL DEFAULT '',
            name TEXT NOT NULL,
            identity TEXT NOT NULL,
            job_id INTEGER NOT NULL REFERENCES jobs(id),
            PRIMARY KEY(host, name)
        );
        INSERT INTO inbox_taken_by_host(name, identity, job_id) SELECT name, identity, job_id FROM inbox_taken;
        DROP TABLE inbox_taken;
        ALTER TABLE inbox_taken_by_host RENAME TO inbox_taken;
        CREATE INDEX inbox_taken_name ON inbox_taken(name);
        ALTER TABLE job_events ADD COLUMN host TEXT NOT NULL DEFAULT '';
        CREATE TABLE hosts(host TEXT PRIMARY KEY, started REAL NOT NULL, seen REAL NOT NULL, pid INTEGER NOT NULL);
        """,
        // 5: a claim walks the runnable jobs of a stage in claiming order (ready_at, id)
        // and stops at its limit. The index it replaced had no id and no state, so a
        // backlog with one ready_at (a queue file's batch) was read and sorted whole on
        // every claim: PostgreSQL, 20,000 queued jobs, 20-300 ms per claim against 0.2 ms.
        """
        CREATE INDEX jobs_runnable ON jobs(stage_index, ready_at, id) WHERE ready_at IS NOT NULL AND state IN ('queued', 'waiting');
        DROP INDEX jobs_ready;
        """,
        // 6: the photo's seal (`PhotoSeal.seal`: its identity and ctime when hashed), so
        // stages and the local store trust intake's hash for it. NULL: never sealed.
        "ALTER TABLE inbox_taken ADD COLUMN seal TEXT;",
        // 7: a user's unfinished jobs, counted before their queue file is read
        // (`unfinishedJobs`), without walking the jobs they finished.
        "CREATE INDEX jobs_owner_unfinished ON jobs(owner) WHERE state IN ('queued', 'running', 'waiting');",
        // 8: fair share per owner (`Journal.turn`). A claim takes queued jobs by turn,
        // round robin by owner; waiting jobs whose back-off is over by when they became
        // ready. Jobs unfinished at the upgrade keep their order (turn = id).
        fairShare(bigint: "INTEGER"),
        // 9: the job's working set (`WorkingSet`: its files and facts, JSON) as the last
        // stage that continued left it; NULL: none did yet (the job's photo alone).
        "ALTER TABLE jobs ADD COLUMN working_set TEXT;",
        // 10: the code of the job's error (`PhotomemoError.Code`, e.g. `no_space`,
        // `photo_gone`), set with `error` by a stage's outcome; NULL: none, or text alone.
        "ALTER TABLE jobs ADD COLUMN error_code TEXT;",
        // 11: retention (`Journal.prune`). `pruned`: when a finished job's history and
        // payload went and only its keys stayed; the indexes find prunable jobs by age and
        // what still refers to a job.
        retention(real: "REAL"),
        // 12: reprocess jobs (`Journal+Reprocess`) counted by state for `status`, without
        // walking the other jobs.
        reprocessCounts,
        // 13: which process wrote a host's heartbeat (where its pid means something, and a
        // token of its own), so a daemon taking a host id can tell its last daemon is gone,
        // and one whose id was taken sees it (`Journal+Hosts`).
        hostsDaemon,
    ]

    static let hostsDaemon = """
        ALTER TABLE hosts ADD COLUMN pid_space TEXT NOT NULL DEFAULT '';
        ALTER TABLE hosts ADD COLUMN instance TEXT NOT NULL DEFAULT '';
        """

    static let reprocessCounts = "CREATE INDEX jobs_reprocess ON jobs(state) WHERE origin = 'reprocess';"

    /// `pruned` and the indexes pruning reads (both engines).
    static func retention(real: String) -> String {
        """
        ALTER TABLE jobs ADD COLUMN pruned \(real);
        CREATE INDEX jobs_prunable ON jobs(state, finished) WHERE pruned IS NULL AND finished IS NOT NULL;
        CREATE INDEX jobs_duplicate_of ON jobs(duplicate_of) WHERE duplicate_of IS NOT NULL;
        CREATE INDEX jobs_after_job ON jobs(after_job) WHERE after_job IS NOT NULL;
        CREATE INDEX inbox_taken_job ON inbox_taken(job_id);
        """
    }

    /// `turn` and its indexes (both engines): queued jobs in claiming order per stage,
    /// waiting ones by when their back-off ends, and each owner's and everyone's
    /// unfinished turns, which intake reads to give a new job its turn.
    static func fairShare(bigint: String) -> String {
        """
        ALTER TABLE jobs ADD COLUMN turn \(bigint) NOT NULL DEFAULT 0;
        UPDATE jobs SET turn = id WHERE state IN ('queued', 'running', 'waiting');
        CREATE INDEX jobs_turns ON jobs(stage_index, turn, id) WHERE ready_at IS NOT NULL AND state = 'queued';
        CREATE INDEX jobs_backoff ON jobs(stage_index, ready_at, id) WHERE ready_at IS NOT NULL AND state = 'waiting';
        CREATE INDEX jobs_owner_turn ON jobs(owner, turn) WHERE state IN ('queued', 'running', 'waiting');
        CREATE INDEX jobs_front ON jobs(turn) WHERE state IN ('queued', 'running', 'waiting');
        DROP INDEX jobs_runnable;
        """
    }

    /// The same schema on PostgreSQL, where it starts at what SQLite's migrations reach.
    static let postgresMigrations: [String] = [
        """
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE jobs(
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            key TEXT UNIQUE,
            origin TEXT NOT NULL,
            photo TEXT,
            photo_path TEXT,
            photo_sha256 TEXT,
            memo TEXT NOT NULL,
            state TEXT NOT NULL,
            wait_reason TEXT,
            stage TEXT,
            stage_index INTEGER NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 0,
            outages INTEGER NOT NULL DEFAULT 0,
            ready_at DOUBLE PRECISION,
            deadline DOUBLE PRECISION,
            duplicate_of BIGINT REFERENCES jobs(id),
            error TEXT,
            results TEXT NOT NULL DEFAULT '{}',
            quarantine TEXT,
            source TEXT,
            created DOUBLE PRECISION NOT NULL,
            updated DOUBLE PRECISION NOT NULL,
            finished DOUBLE PRECISION,
            owner TEXT,
            record_deleted DOUBLE PRECISION,
            crashes INTEGER NOT NULL DEFAULT 0,
            after_job BIGINT REFERENCES jobs(id),
            host TEXT NOT NULL DEFAULT '',
            lease_host TEXT NOT NULL DEFAULT '',
            lease_until DOUBLE PRECISION
        );
        CREATE INDEX jobs_ready ON jobs(stage_index, ready_at) WHERE ready_at IS NOT NULL;
        CREATE INDEX jobs_waiting ON jobs(ready_at) WHERE state = 'waiting';
        CREATE INDEX jobs_deadline ON jobs(deadline) WHERE deadline IS NOT NULL;
        CREATE INDEX jobs_photo ON jobs(photo) WHERE photo IS NOT NULL;
        CREATE INDEX jobs_sha ON jobs(photo_sha256) WHERE photo_sha256 IS NOT NULL;
        CREATE INDEX jobs_state ON jobs(state);
        CREATE INDEX jobs_owner ON jobs(owner, id);
        CREATE INDEX jobs_crashed ON jobs(stage_index) WHERE crashes > 0;
        CREATE INDEX jobs_leases ON jobs(lease_until) WHERE state = 'running';
        CREATE TABLE job_events(
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            job_id BIGINT NOT NULL REFERENCES jobs(id),
            at DOUBLE PRECISION NOT NULL,
            stage TEXT,
            attempt INTEGER,
            event TEXT NOT NULL,
            duration_ms DOUBLE PRECISION,
            message TEXT,
            host TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX job_events_job ON job_events(job_id);
        CREATE INDEX job_events_stage ON job_events(stage, event, id) WHERE stage IS NOT NULL;
        CREATE INDEX job_events_finished ON job_events(at) WHERE event = 'finished';
        CREATE TABLE queue_files(
            host TEXT NOT NULL DEFAULT '',
            name TEXT NOT NULL,
            inode BIGINT NOT NULL,
            generation BIGINT NOT NULL,
            "offset" BIGINT NOT NULL,
            line BIGINT NOT NULL,
            tail TEXT,
            PRIMARY KEY(host, name)
        );
        CREATE TABLE inbox_taken(
            host TEXT NOT NULL DEFAULT '',
            name TEXT NOT NULL,
            identity TEXT NOT NULL,
            job_id BIGINT NOT NULL REFERENCES jobs(id),
            PRIMARY KEY(host, name)
        );
        CREATE INDEX inbox_taken_name ON inbox_taken(name);
        CREATE TABLE hosts(host TEXT PRIMARY KEY, started DOUBLE PRECISION NOT NULL, seen DOUBLE PRECISION NOT NULL,
                           pid INTEGER NOT NULL);
        """,
        // 2: a claim walks the runnable jobs of a stage in claiming order (ready_at, id)
        // and stops at its limit. The index it replaced had no id and no state, so a
        // backlog with one ready_at (a queue file's batch) was read and sorted whole on
        // every claim: PostgreSQL, 20,000 queued jobs, 20-300 ms per claim against 0.2 ms.
        """
        CREATE INDEX jobs_runnable ON jobs(stage_index, ready_at, id) WHERE ready_at IS NOT NULL AND state IN ('queued', 'waiting');
        DROP INDEX jobs_ready;
        """,
        // 3: the photo's seal (`PhotoSeal.seal`: its identity and ctime when hashed), so
        // stages and the local store trust intake's hash for it. NULL: never sealed.
        "ALTER TABLE inbox_taken ADD COLUMN seal TEXT;",
        // 4: as SQLite's 7, a user's unfinished jobs.
        "CREATE INDEX jobs_owner_unfinished ON jobs(owner) WHERE state IN ('queued', 'running', 'waiting');",
        // 5: as SQLite's 8, fair share per owner.
        fairShare(bigint: "BIGINT"),
        // 6: as SQLite's 9, the job's working set.
        "ALTER TABLE jobs ADD COLUMN working_set TEXT;",
        // 7: as SQLite's 10, the code of the job's error.
        "ALTER TABLE jobs ADD COLUMN error_code TEXT;",
        // 8: as SQLite's 11, retention.
        retention(real: "DOUBLE PRECISION"),
        // 9: as SQLite's 12, reprocess jobs counted by state.
        reprocessCounts,
        // 10: as SQLite's 13, the heartbeat's process.
        hostsDaemon,
    ]
}
