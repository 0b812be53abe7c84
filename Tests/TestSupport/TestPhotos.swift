import Foundation

/// The package's root folder (from this file's path).
public let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// The real camera photos of `../shared/testdata/photos` (read-only). Found through
/// `$PHOTOMEMO_TESTDATA`, next to the checkout, or at /work/shared, so that a clone made
/// anywhere (CI clones main elsewhere) still finds them.
public let testPhotos: URL = {
    var candidates: [URL] = []
    if let env = ProcessInfo.processInfo.environment["PHOTOMEMO_TESTDATA"] { candidates.append(URL(fileURLWithPath: env)) }
    candidates.append(packageRoot.deletingLastPathComponent().appendingPathComponent("shared/testdata/photos"))
    candidates.append(URL(fileURLWithPath: "/work/shared/testdata/photos"))
    return candidates.first { FileManager.default.fileExists(atPath: $0.appendingPathComponent("corrupted.jpg").path) }
        ?? candidates[candidates.count - 2]
}()

public func testPhoto(_ name: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: testPhotos.appendingPathComponent(name)))
}
