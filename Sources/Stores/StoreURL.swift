import Foundation
import StageKit

/// Opens the store a job definition names: `file:DIR` (relative to the home) or
/// `s3://BUCKET[/PREFIX]?endpoint=URL&region=R`.
public enum Stores {
    public static func open(_ spec: String, home: URL) throws -> any AssetStore {
        if spec.hasPrefix("file:") {
            let path = String(spec.dropFirst(5))
            guard !path.isEmpty else { throw PhotomemoError(.badDefinition, "store \"file:\" needs a folder") }
            return try LocalStore(root: path.hasPrefix("/") ? path : home.appendingPathComponent(path).path)
        }
        if spec.hasPrefix("s3://") { return try S3Store(url: spec) }
        throw PhotomemoError(.badDefinition, "store \"\(spec)\": expected file:DIR or s3://BUCKET[/PREFIX]?endpoint=URL")
    }
}
