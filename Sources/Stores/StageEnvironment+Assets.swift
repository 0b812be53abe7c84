import StageKit

extension StageEnvironment {
    /// The asset store `spec` names (nil: the definition's `store`), shared by every part
    /// of the daemon that names the same one.
    public func assetStore(_ spec: String? = nil) throws -> any AssetStore {
        let spec = spec ?? store
        let key = spec.hasPrefix("file:") ? "file:" + path(String(spec.dropFirst(5))) : spec
        return try resources.shared("assets:" + key) { try Stores.open(spec, home: home) }
    }
}
