import Foundation
import PhotomemoCore
import StageKit

/// A throwaway daemon home (inbox, renditions) and the environment stages are built with:
/// the default database (`sqlite:photomemo.sqlite`) and store (`file:store`) in it.
final class StageHome {
    let root: String
    let environment: StageEnvironment

    init() throws {
        root = NSTemporaryDirectory() + "pm-stage-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        for d in ["inbox", "renditions"] {
            try FileManager.default.createDirectory(atPath: root + "/" + d, withIntermediateDirectories: true)
        }
        environment = StageEnvironment(home: URL(fileURLWithPath: root))
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func stage<S: Stage>(_ type: S.Type, _ with: [String: JSONValue] = [:]) throws -> S {
        try S(options: StageOptions(validating: with, against: S.options, place: "test"), environment: environment)
    }

    /// Writes `bytes` to `path` (relative to the home); returns the absolute path and its SHA-256.
    func write(_ path: String, _ bytes: String) throws -> (path: String, sha: String) {
        let p = root + "/" + path
        try FileManager.default.createDirectory(atPath: (p as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes.utf8).write(to: URL(fileURLWithPath: p))
        return (p, SHA256.hex(Data(bytes.utf8)))
    }

    /// The regular files under `store/`, walked independently of the store's own `list`.
    func storedFiles() -> [String] {
        let store = root + "/store"
        guard let e = FileManager.default.enumerator(atPath: store) else { return [] }
        var out: [String] = []
        while let rel = e.nextObject() as? String {
            if rel.hasPrefix(".tmp") { continue }
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: store + "/" + rel, isDirectory: &isDir), !isDir.boolValue { out.append(rel) }
        }
        return out.sorted()
    }

    func exists(_ absolute: String) -> Bool { FileManager.default.fileExists(atPath: absolute) }
}

extension StageOutcome {
    var result: JSONValue? { if case .continue(let r) = self { r } else { nil } }
}
