import Foundation
import Glibc
import Index
import Journal
import PhotomemoCore
import Postgres
import StageKit

/// `photomemo restore DIR --home NEWHOME` (no daemon): checks everything the manifest
/// says before writing anything — the manifest's own version, schema versions this binary
/// can open, NEWHOME absent or empty, every file's and copied object's size and sha256 —
/// then writes the home into a hidden folder beside NEWHOME, fsyncs it and renames it into
/// place, so NEWHOME is either untouched or whole.
public enum BackupRestore {
    public struct Summary: Sendable {
        public let home: String
        public let engine: String
        public let objects: Int
        public let bytes: Int64
        /// The restored definition file, to start the daemon with (`--job`).
        public let jobDefinition: String?
        /// What became of what that definition named of its own place (`its definition's store
        /// file:/data/objects is now file:store, ...`), or why it was not looked at.
        public let rewritten: [String]
    }

    /// `database`: for a PostgreSQL backup, the empty database to restore into.
    public static func restore(from dir: String, home asked: String, database: String? = nil) throws -> Summary {
        let manifest = try BackupManifest(folder: dir)
        let postgres = manifest.engine == "postgres"
        if postgres && database == nil {
            throw PhotomemoError(.badUsage, "\(dir) is a PostgreSQL backup: name the empty database to restore it into with --database postgres://USER@HOST:PORT/DB")
        }
        try checkSchemas(manifest, postgres: postgres, dir: dir)
        let home = try BackupFolder.onlyAdminsCanChange(asked, what: "--home")
        try checkTarget(home)
        let bytes = try checkFiles(manifest, dir: dir)
        if let database { try checkEmpty(database) }

        let parent = (home as NSString).deletingLastPathComponent
        let staging = parent + "/." + (home as NSString).lastPathComponent + ".restoring-\(getpid())"
        try? FileManager.default.removeItem(atPath: staging)
        try syscall("mkdir \(staging)", blocking: { mkdir(staging, 0o750) })
        var rewritten: [String] = []
        do {
            // Each copy is hashed again: the backup's files may change after the check (a
            // folder another user can write), and only bytes the manifest names are restored.
            for f in manifest.files where f.path != "database.pgdump" {
                try copyChecked(dir + "/" + f.path, to: staging + "/" + f.path, sha256: f.sha256, what: "file \(f.path)")
            }
            // A PostgreSQL database and an S3 store are restored where they are named.
            if let job = manifest.jobDefinition {
                rewritten = try enginesInTheHome(staging + "/" + job, home: home, database: manifest.engine == "sqlite",
                                                 store: manifest.store.hasPrefix("file:"))
            }
            try syscall("mkdir \(staging)/store", blocking: { mkdir(staging + "/store", 0o750) })
            for o in manifest.objects where o.copied {
                try copyChecked(dir + "/store/" + o.key, to: staging + "/store/" + o.key, sha256: o.sha256, what: "object \(o.key)")
            }
            try BackupFolder.syncFolders(under: staging + "/store")
            try DurableFile.fsyncFolder(staging)
            if let database {
                try PostgresTools.run("pg_restore", ["--no-owner", "--exit-on-error", "--dbname", database, dir + "/database.pgdump"])
            }
            if Files.exists(home) { try syscall("rmdir \(home)", blocking: { rmdir(home) }) }
            try syscall("rename \(staging)", blocking: { rename(staging, home) })
            try DurableFile.fsyncFolder(parent)
        } catch {
            try? FileManager.default.removeItem(atPath: staging)
            throw error
        }
        return Summary(home: home, engine: manifest.engine, objects: manifest.objects.filter(\.copied).count, bytes: bytes,
                       jobDefinition: manifest.jobDefinition.map { home + "/" + $0 }, rewritten: rewritten)
    }

    /// A definition naming a `file:` store or a SQLite database of its own place
    /// (`file:/data/objects`) would have the restored home use the original's — and its
    /// collector and `verify --repair` delete the objects the original stored since, as
    /// orphans. Both were copied into NEWHOME: the restored definition names those. What
    /// it named before, for each one changed.
    static func enginesInTheHome(_ definition: String, home: String, database: Bool, store: Bool) throws -> [String] {
        guard let data = FileManager.default.contents(atPath: definition) else { return [] }
        guard var job = (try? JSONValue.parse(data))?.objectValue else {
            // Restored as it was backed up (its sha256 checked); the daemon refuses it until fixed.
            return ["its definition \(home)/\((definition as NSString).lastPathComponent) is not a JSON object, so the store and database it names were not checked: fix it, and name the restored home's own"]
        }
        var changed: [String] = []
        for (key, prefix, fresh, copied) in [("store", "file:", StageEnvironment.defaultStore, store),
                                             ("database", "sqlite:", StageEnvironment.defaultDatabase, database)] where copied {
            guard let named = job[key]?.stringValue, named.hasPrefix(prefix), named != fresh else { continue }
            job[key] = .string(fresh)
            changed.append("its definition's \(key) \(named) is now \(fresh), restored in \(home): a restored home never shares the original's")
        }
        if !changed.isEmpty { try DurableFile.write(JSONValue.object(job).jsonData, to: definition) }
        return changed
    }

    static func copyChecked(_ source: String, to target: String, sha256: String, what: String) throws {
        let (hex, size) = try BackupFolder.copy(source, to: target)
        guard hex == sha256 else {
            throw PhotomemoError(.badBackup, "\(what) changed while it was restored: \(source) now has sha256 \(hex) (\(size) bytes), the manifest says \(sha256)")
        }
    }

    static func checkSchemas(_ m: BackupManifest, postgres: Bool, dir: String) throws {
        let known = ["journal": Journal.schemaVersion(postgres: postgres), "record_index": RecordStore.schemaVersion(postgres: postgres)]
        for (what, version) in m.schemas.sorted(by: { $0.key < $1.key }) {
            guard let mine = known[what] else { continue }
            guard version <= mine else {
                throw PhotomemoError(.badBackup, "\(dir) holds a \(what) of schema version \(version), newer than this photomemo opens (\(mine)); restore it with photomemo \(m.photomemo) or newer")
            }
        }
    }

    static func checkTarget(_ home: String) throws {
        var st = stat()
        guard lstat(home, &st) == 0 else {
            let parent = (home as NSString).deletingLastPathComponent
            guard Files.exists(parent) else { throw PhotomemoError(.badUsage, "--home \(home): its parent folder \(parent) does not exist") }
            return
        }
        guard st.st_mode & S_IFMT == S_IFDIR, ((try? FileManager.default.contentsOfDirectory(atPath: home)) ?? ["?"]).isEmpty else {
            throw PhotomemoError(.badUsage, "--home \(home) exists and is not an empty folder: restore writes a new home, never over one")
        }
    }

    /// Every file and copied object: there, of its size, with its sha256 (an object's also
    /// the one its key names). The bytes checked.
    static func checkFiles(_ m: BackupManifest, dir: String) throws -> Int64 {
        let database = m.engine == "postgres" ? "database.pgdump" : "photomemo.sqlite"
        guard m.files.contains(where: { $0.path == database }) else {
            throw PhotomemoError(.badBackup, "\(dir)/\(BackupManifest.fileName) lists no \(database)")
        }
        var total: Int64 = 0
        func check(_ path: String, bytes: Int64?, sha256: String, what: String) throws {
            var st = stat()
            guard lstat(path, &st) == 0 else { throw PhotomemoError(.badBackup, "\(what) is missing: \(path)") }
            // Not a symlink, FIFO or device: one could lead out of the folder or never end.
            guard st.st_mode & S_IFMT == S_IFREG else { throw PhotomemoError(.badBackup, "\(what) is not a regular file: \(path)") }
            let (hex, size) = try SHA256.hexOfFile(atPath: path)
            guard bytes == nil || bytes == size, hex == sha256 else {
                throw PhotomemoError(.badBackup, "\(what) is damaged: \(path) has sha256 \(hex) (\(size) bytes), the manifest says \(sha256)\(bytes.map { " (\($0) bytes)" } ?? "")")
            }
            total += size
        }
        for f in m.files { try check(dir + "/" + f.path, bytes: f.bytes, sha256: f.sha256, what: "file \(f.path)") }
        for o in m.objects where o.copied {
            guard o.sha256 == o.key.split(separator: "/").last.map(String.init) else {
                throw PhotomemoError(.badBackup, "object \(o.key): the manifest's sha256 \(o.sha256) is not its key's")
            }
            try check(dir + "/store/" + o.key, bytes: o.bytes, sha256: o.sha256, what: "object \(o.key)")
        }
        return total
    }

    /// A database that already holds photomemo's tables is refused: restore never merges.
    static func checkEmpty(_ url: String) throws {
        let db = try PostgresDatabase(url: url)
        if try db.queryOne("SELECT 1 FROM pg_tables WHERE tablename IN ('schema_version', 'index_schema_version', 'jobs', 'records')", []) != nil {
            throw PhotomemoError(.badUsage, "--database \(PostgresConnection.withoutPassword(url)) already holds photomemo tables: restore into an empty database")
        }
    }
}
