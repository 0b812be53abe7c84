import Foundation
import StageKit

extension StageEnvironment {
    /// The asset store `spec` names (nil: the definition's `store`), shared by every part
    /// of the daemon that names the same one.
    public func assetStore(_ spec: String? = nil) throws -> any AssetStore {
        let spec = spec ?? store
        return try resources.shared("assets:" + storeIdentity(spec)) { try Stores.open(spec, home: home) }
    }

    /// One name for every spelling of a store (a `file:` folder by its path from the root).
    public func storeIdentity(_ spec: String) -> String {
        spec.hasPrefix("file:") ? "file:" + (path(String(spec.dropFirst(5))) as NSString).standardizingPath : spec
    }
}
