/// The record index's schema (in the home's SQLite file beside the journal, or the shared
/// PostgreSQL database), versioned separately from the journal's.
enum IndexSchema {
    static let migrations: [String] = [
        """
        CREATE TABLE records(
            id TEXT PRIMARY KEY,
            job_key TEXT UNIQUE,
            photo_sha256 TEXT,
            type TEXT NOT NULL,
            memo TEXT NOT NULL DEFAULT '',
            owner TEXT,
            public_read INTEGER NOT NULL DEFAULT 0,
            acl TEXT NOT NULL DEFAULT '{}',
            fields TEXT NOT NULL DEFAULT '{}',
            assets TEXT NOT NULL DEFAULT '{}',
            exif TEXT NOT NULL DEFAULT '{}',
            taken REAL, width INTEGER, height INTEGER,
            created REAL NOT NULL, modified REAL NOT NULL,
            change_tag TEXT NOT NULL
        );
        CREATE INDEX records_type ON records(type, created);
        CREATE INDEX records_created ON records(created);
        CREATE INDEX records_photo ON records(photo_sha256) WHERE photo_sha256 IS NOT NULL;
        CREATE INDEX records_owner ON records(owner);
        -- Typed fields, one row per value (per element for lists): range, equality and
        -- prefix queries on a field use these indexes instead of scanning records.
        CREATE TABLE record_fields(
            record_id TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            kind TEXT NOT NULL,
            text_value TEXT,
            num_value REAL,
            delete_self INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX record_fields_num ON record_fields(name, num_value) WHERE num_value IS NOT NULL;
        CREATE INDEX record_fields_text ON record_fields(name, text_value) WHERE text_value IS NOT NULL;
        CREATE INDEX record_fields_record ON record_fields(record_id);
        CREATE INDEX record_fields_refs ON record_fields(text_value) WHERE kind = 'r';
        CREATE TABLE record_acl(
            record_id TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
            user TEXT NOT NULL,
            can_write INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX record_acl_user ON record_acl(user, record_id);
        CREATE TABLE record_assets(
            record_id TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
            key TEXT NOT NULL
        );
        CREATE INDEX record_assets_key ON record_assets(key);
        CREATE VIRTUAL TABLE records_fts USING fts5(memo, content='records', content_rowid='rowid');
        CREATE TABLE changes(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            record_id TEXT NOT NULL,
            type TEXT NOT NULL,
            op TEXT NOT NULL,
            at REAL NOT NULL,
            owner TEXT,
            readers TEXT NOT NULL DEFAULT '[]',
            public_read INTEGER NOT NULL DEFAULT 0,
            record TEXT NOT NULL
        );
        """,
        // 2: subscriptions and their durable outbox.
        """
        CREATE TABLE subscriptions(
            id TEXT PRIMARY KEY,
            owner TEXT,
            type TEXT NOT NULL,
            predicate TEXT NOT NULL,
            fires_on TEXT NOT NULL,
            alert TEXT,
            sink TEXT NOT NULL,
            target TEXT,
            secret TEXT,
            created REAL NOT NULL
        );
        CREATE TABLE deliveries(
            id INTEGER PRIMARY KEY,
            subscription_id TEXT NOT NULL REFERENCES subscriptions(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            state TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            next_at REAL NOT NULL,
            last_error TEXT,
            delivered_at REAL,
            UNIQUE(subscription_id, seq)
        );
        CREATE INDEX deliveries_due ON deliveries(state, next_at);
        ALTER TABLE changes ADD COLUMN fanned_out INTEGER NOT NULL DEFAULT 0;
        """,
        // 3: jobs already applied (updates are idempotent too), and store objects no record
        // uses any more, waiting to be deleted from the asset store.
        """
        CREATE TABLE applied_jobs(job_key TEXT PRIMARY KEY, record_id TEXT NOT NULL);
        INSERT INTO applied_jobs(job_key, record_id) SELECT job_key, id FROM records WHERE job_key IS NOT NULL;
        CREATE TABLE released_assets(key TEXT PRIMARY KEY, at REAL NOT NULL);
        """,
        // 4: a subscription whose predicate cannot be evaluated is parked with the reason
        // (and skipped by fan-out) instead of failing every write.
        """
        ALTER TABLE subscriptions ADD COLUMN parked_error TEXT;
        ALTER TABLE subscriptions ADD COLUMN parked_at REAL;
        """,
        // 5: creation order as a column both engines have (keyset cursors and ties were on
        // SQLite's rowid): the seq of the record's create change, never reused. Existing
        // records keep their rowid, which no later seq can reach.
        """
        ALTER TABLE records ADD COLUMN ord INTEGER;
        UPDATE records SET ord = rowid;
        CREATE UNIQUE INDEX records_ord ON records(ord);
        """,
        // 6: a delivery being sent is claimed by the daemon sending it until a deadline,
        // so daemons sharing a database never send one twice at once.
        """
        ALTER TABLE deliveries ADD COLUMN claimed_by TEXT;
        ALTER TABLE deliveries ADD COLUMN claimed_until REAL;
        """,
        // 7: who may read each record, the rows a user's query starts from (its cost then
        // depends only on what they may read): the owner, each named reader and writer, and
        // '' when public (RecordStore+Readers). And each record's memo tokens, for testing
        // one record's memo without FTS5's lists over every owner's (taken from FTS5 itself).
        """
        CREATE TABLE record_readers(
            reader TEXT NOT NULL,
            record_id TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
            PRIMARY KEY(reader, record_id)
        ) WITHOUT ROWID;
        CREATE INDEX record_readers_record ON record_readers(record_id);
        INSERT OR IGNORE INTO record_readers SELECT owner, id FROM records WHERE owner IS NOT NULL AND owner <> '';
        INSERT OR IGNORE INTO record_readers SELECT "user", record_id FROM record_acl WHERE "user" <> '';
        INSERT OR IGNORE INTO record_readers SELECT '', id FROM records WHERE public_read = 1;
        CREATE TABLE record_tokens(
            record_id TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
            token TEXT NOT NULL,
            PRIMARY KEY(record_id, token)
        ) WITHOUT ROWID;
        CREATE VIRTUAL TABLE temp.records_vocab USING fts5vocab(main, records_fts, instance);
        INSERT OR IGNORE INTO record_tokens SELECT r.id, v.term FROM temp.records_vocab v JOIN records r ON r.rowid = v.doc;
        DROP TABLE temp.records_vocab;
        """,
        // 8: a random secret of the home, made once: new record ids are an HMAC of the job
        // key with it, so no one computes another user's record id from a guessed key.
        // Kept with the records (a backup carries it); records made before keep their ids.
        """
        CREATE TABLE index_secrets(name TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO index_secrets(name, value) VALUES ('record_id', lower(hex(randomblob(32))));
        """,
        // 9: the receipt of a record's photo: where it came from (inbox-relative path, or
        // the memo line's `photo`), shown and queried as `source`; a `keep` inbox's new
        // bytes for a path find that path's record by it.
        """
        ALTER TABLE records ADD COLUMN source TEXT;
        CREATE INDEX records_source ON records(source, owner) WHERE source IS NOT NULL;
        """,
        // 10: each owner's records and asset bytes, kept by triggers in every write's own
        // transaction: a quota check reads one row, not every record of the user (issue 25).
        """
        CREATE TABLE owner_usage(owner TEXT PRIMARY KEY, records INTEGER NOT NULL, bytes INTEGER NOT NULL) WITHOUT ROWID;
        INSERT INTO owner_usage SELECT owner, count(*), sum((SELECT coalesce(sum(json_extract(a.value, '$.bytes')), 0) FROM json_each(r.assets) a))
            FROM records r WHERE owner IS NOT NULL GROUP BY owner;
        CREATE TRIGGER owner_usage_insert AFTER INSERT ON records BEGIN
            INSERT INTO owner_usage SELECT NEW.owner, 1, (SELECT coalesce(sum(json_extract(value, '$.bytes')), 0) FROM json_each(NEW.assets))
                WHERE NEW.owner IS NOT NULL
                ON CONFLICT(owner) DO UPDATE SET records = records + 1, bytes = bytes + excluded.bytes;
        END;
        CREATE TRIGGER owner_usage_delete AFTER DELETE ON records BEGIN
            UPDATE owner_usage SET records = records - 1, bytes = bytes - (SELECT coalesce(sum(json_extract(value, '$.bytes')), 0) FROM json_each(OLD.assets))
                WHERE owner = OLD.owner;
        END;
        CREATE TRIGGER owner_usage_update AFTER UPDATE OF assets, owner ON records BEGIN
            UPDATE owner_usage SET records = records - 1, bytes = bytes - (SELECT coalesce(sum(json_extract(value, '$.bytes')), 0) FROM json_each(OLD.assets))
                WHERE owner = OLD.owner;
            INSERT INTO owner_usage SELECT NEW.owner, 1, (SELECT coalesce(sum(json_extract(value, '$.bytes')), 0) FROM json_each(NEW.assets))
                WHERE NEW.owner IS NOT NULL
                ON CONFLICT(owner) DO UPDATE SET records = records + 1, bytes = bytes + excluded.bytes;
        END;
        """,
        // 11: the trash. A deleted record moves here whole (its row, who could read it, its
        // asset keys) until it is restored or purged; its objects stay in the store and
        // still count in its owner's usage (they still take the store's bytes).
        """
        CREATE TABLE trash(
            id TEXT PRIMARY KEY,
            job_key TEXT, photo_sha256 TEXT, source TEXT,
            type TEXT NOT NULL, memo TEXT NOT NULL, owner TEXT, public_read INTEGER NOT NULL,
            acl TEXT NOT NULL, fields TEXT NOT NULL, assets TEXT NOT NULL, exif TEXT NOT NULL,
            taken REAL, width INTEGER, height INTEGER,
            created REAL NOT NULL, modified REAL NOT NULL, change_tag TEXT NOT NULL, ord INTEGER, row_id INTEGER,
            deleted_at REAL NOT NULL,
            trashed_with TEXT NOT NULL
        );
        CREATE INDEX trash_deleted ON trash(deleted_at);
        CREATE INDEX trash_with ON trash(trashed_with);
        CREATE TABLE trash_readers(
            reader TEXT NOT NULL,
            record_id TEXT NOT NULL REFERENCES trash(id) ON DELETE CASCADE,
            PRIMARY KEY(reader, record_id)
        ) WITHOUT ROWID;
        CREATE INDEX trash_readers_record ON trash_readers(record_id);
        CREATE TABLE trash_assets(
            record_id TEXT NOT NULL REFERENCES trash(id) ON DELETE CASCADE,
            key TEXT NOT NULL
        );
        CREATE INDEX trash_assets_key ON trash_assets(key);
        CREATE INDEX trash_assets_record ON trash_assets(record_id);
        CREATE TRIGGER owner_usage_trash_insert AFTER INSERT ON trash BEGIN
            INSERT INTO owner_usage SELECT NEW.owner, 1, (SELECT coalesce(sum(json_extract(value, '$.bytes')), 0) FROM json_each(NEW.assets))
                WHERE NEW.owner IS NOT NULL
                ON CONFLICT(owner) DO UPDATE SET records = records + 1, bytes = bytes + excluded.bytes;
        END;
        CREATE TRIGGER owner_usage_trash_delete AFTER DELETE ON trash BEGIN
            UPDATE owner_usage SET records = records - 1, bytes = bytes - (SELECT coalesce(sum(json_extract(value, '$.bytes')), 0) FROM json_each(OLD.assets))
                WHERE owner = OLD.owner;
        END;
        """,
        // `status` counts a user's trashed records.
        """
        CREATE INDEX trash_owner ON trash(owner);
        """,
    ]
}
