import PhotomemoCore

extension StageEnvironment {
    /// The record index `spec` names (nil: the definition's `database`), shared by every
    /// part of the daemon that names the same file.
    public func recordStore(_ spec: String? = nil) throws -> RecordStore {
        let path = try RecordStore.path(spec: spec ?? database, home: home)
        return try resources.shared("records:" + path) { try RecordStore(path: path) }
    }
}
