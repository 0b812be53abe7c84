import Foundation
import Glibc
import Index
import Journal
import PhotomemoCore
import Postgres
import SQLite
import StageKit
import Stores

/// `photomemo backup DIR`, run by the daemon while it serves (off the loop): the database
/// first (one consistent instant: SQLite's online backup inside one read transaction, or
/// `pg_dump`'s snapshot), then every store object (any record in that copy had its
/// assets stored before it was written, and the daemon holds its asset collector for the
/// run, so none is deleted meanwhile), the job definition, and the manifest last.
struct BackupWriter {
    enum Source {
        case sqlite(path: String)
        case postgres(url: String)
    }

    let source: Source
    let store: any AssetStore
    /// The definition's file, or a name like "built-in photo-memo" (not copied).
    let definitionSource: String
    let cancelled: @Sendable () -> Bool
    /// Where a backup may not go (`BackupFolder.createEmpty`): the home's inbox, queue.d, store, ...
    var daemonFolders: [String] = []

    func write(to asked: String) throws -> BackupManifest {
        let dir = try BackupFolder.createEmpty(asked, what: "backup folder", outside: daemonFolders + ((store as? LocalStore).map { [$0.root] } ?? []))
        var files: [BackupManifest.File] = []
        let engine: String, schemas: [String: Int]
        var recordKeys: Set<String>? = nil
        switch source {
        case .sqlite(let path):
            let copy = dir + "/photomemo.sqlite"
            try Database.onlineBackup(of: path, to: copy, cancelled: cancelled)
            let db = try Database(path: copy, readOnly: true)
            schemas = ["journal": try Journal.storedSchemaVersion(db), "record_index": try RecordStore.storedSchemaVersion(db)]
            recordKeys = Set(try db.query("SELECT DISTINCT key FROM record_assets", []).compactMap { $0.string(0) })
            engine = "sqlite"
            files.append(try BackupFolder.entry(dir, "photomemo.sqlite"))
        case .postgres(let url):
            let db = try PostgresDatabase(url: url)
            schemas = ["journal": try Journal.storedSchemaVersion(db), "record_index": try RecordStore.storedSchemaVersion(db)]
            try PostgresTools.run("pg_dump", ["--format=custom", "--no-owner", "--file", dir + "/database.pgdump", url])
            engine = "postgres"
            files.append(try BackupFolder.entry(dir, "database.pgdump"))
        }
        var jobDefinition: String? = nil
        if definitionSource.hasPrefix("/"), let data = FileManager.default.contents(atPath: definitionSource) {
            try DurableFile.write(data, to: dir + "/job.json")
            files.append(try BackupFolder.entry(dir, "job.json"))
            jobDefinition = "job.json"
        }
        var objects: [BackupManifest.Object] = [], damaged: [String] = []
        if let local = store as? LocalStore {
            func copy(_ key: String) throws {
                if cancelled() { throw PhotomemoError(.notRunning, "backup stopped: the daemon is stopping") }
                let target = dir + "/store/" + key
                let (sha, bytes) = try BackupFolder.linkOrCopy(local.root + "/" + key, to: target)
                guard sha == String(key.split(separator: "/").last!) else {
                    unlink(target)
                    return damaged.append(key)
                }
                objects.append(.init(key: key, sha256: sha, bytes: bytes, copied: true))
            }
            for key in try local.list(prefix: "sha256/") where BackupManifest.isObjectKey(key) { try copy(key) }
            // A walk of folders other puts are adding to may pass over an object there before
            // it began (a CI run under heavy load: one rendition of a record in the database
            // copy, missing from the backup): each such object is looked up by its key.
            let listed = Set(objects.map(\.key) + damaged)
            for key in (recordKeys ?? []).subtracting(listed).sorted() where BackupManifest.isObjectKey(key) {
                if try local.head(key: key) != nil { try copy(key) }
            }
            try BackupFolder.syncFolders(under: dir + "/store")
        } else {
            // S3: the bucket keeps its objects (its own versioning or replication backs it
            // up); the manifest names each key and the sha256 its content address is.
            for key in try store.list(prefix: "sha256/") where BackupManifest.isObjectKey(key) {
                objects.append(.init(key: key, sha256: String(key.split(separator: "/").last!), bytes: nil, copied: false))
            }
        }
        let have = Set(objects.map(\.key))
        let missing = recordKeys.map { $0.subtracting(have).subtracting(damaged).sorted() } ?? []
        let manifest = BackupManifest(created: unixNow(), photomemo: PhotomemoVersion.current, engine: engine, schemas: schemas,
                                      store: store.name, jobDefinition: jobDefinition, files: files, objects: objects,
                                      damaged: damaged, missing: missing)
        try DurableFile.write(manifest.json.jsonData, to: dir + "/" + BackupManifest.fileName)
        try DurableFile.fsyncFolder(dir)
        return manifest
    }
}

/// The PostgreSQL client programs (`pg_dump`, `pg_restore`): on the PATH, else under
/// /usr/lib/postgresql/N/bin where Debian installs them.
enum PostgresTools {
    static func path(_ name: String) throws -> String {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map { "\($0)/\(name)" }
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).sorted(by: >)
        for p in path + versions.map({ "/usr/lib/postgresql/\($0)/bin/\(name)" }) where access(p, X_OK) == 0 { return p }
        throw PhotomemoError(.notFound, "\(name) not found on the PATH or in /usr/lib/postgresql/*/bin: install postgresql-client")
    }

    static func run(_ name: String, _ arguments: [String]) throws {
        var env: [String: String] = [:]
        for (k, v) in ProcessInfo.processInfo.environment where k.hasPrefix("PG") || k == "PATH" || k == "HOME" { env[k] = v }
        let r = try Subprocess.run([try path(name)] + arguments, stdin: [], environment: env, timeoutMs: 24 * 3600 * 1000)
        guard r.status == 0 else {
            throw PhotomemoError(.database, "\(name) failed (\(r.status.map { "exit \($0)" } ?? "signal \(r.signal ?? 0)")): \(r.stderrTail)")
        }
    }
}
