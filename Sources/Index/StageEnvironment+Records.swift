import PhotomemoCore

extension StageEnvironment {
    /// The record index `spec` names (nil: the definition's `database`), shared by every
    /// part of the daemon that names the same one. A `sqlite:` file is opened on first
    /// use; any other engine only as the definition's database, which the runtime opens
    /// at start.
    public func recordIndex(_ spec: String? = nil) throws -> any RecordIndex {
        let spec = spec ?? database
        guard spec.hasPrefix("sqlite:") else {
            return try resources.shared("records:" + spec) { () throws -> any RecordIndex in
                throw PhotomemoError(.badDefinition, "database \"\(spec)\": expected sqlite:FILE (a stage's own index must be SQLite; other engines only as the job definition's database)")
            }
        }
        let path = try RecordStore.path(spec: spec, home: home)
        return try resources.shared("records:" + path) { try RecordStore(path: path) } as RecordStore
    }
}
