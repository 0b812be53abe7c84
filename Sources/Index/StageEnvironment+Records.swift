import StageKit
import Postgres

extension StageEnvironment {
    /// What `status` calls a record index its stages could not reach (its server restarting).
    public static let recordIndexDependency = "record index"

    /// The record index `spec` names (nil: the definition's `database`), shared by every
    /// part of the daemon that names the same one, opened on first use: a `sqlite:` file,
    /// or the definition's `postgres://` database (on a connection of its own; a stage's
    /// own index must be SQLite).
    public func recordIndex(_ spec: String? = nil) throws -> any RecordIndex {
        let spec = spec ?? database
        guard spec.hasPrefix("sqlite:") else {
            return try resources.shared("records:" + spec) { () throws -> any RecordIndex in
                guard spec == database, spec.hasPrefix("postgres://") || spec.hasPrefix("postgresql://") else {
                    throw PhotomemoError(.badDefinition, "database \"\(spec)\": expected sqlite:FILE (a stage's own index must be SQLite; other engines only as the job definition's database)")
                }
                return try RecordStore(connection: PostgresDatabase(url: spec), path: PostgresConnection.withoutPassword(spec),
                                       reader: { try PostgresDatabase(url: spec) })
            }
        }
        let path = try RecordStore.path(spec: spec, home: home)
        return try resources.shared("records:" + path) { try RecordStore(path: path) } as RecordStore
    }
}
