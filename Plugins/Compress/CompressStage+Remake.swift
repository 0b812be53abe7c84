import Foundation
import PhotomemoCore
import StageKit

/// `verify --repair`: a record's renditions made again from its stored original, by the
/// very code a job runs (`make`), so the same original and options give the same bytes.
extension CompressStage: RenditionMaker {
    public func renditions(of photo: PhotoBytes) throws -> [String: Data] {
        let made: [(Rendition, Data, Int, Int)]
        do { made = try make(photo, key: "verify-repair").1 } catch let wait as DecodeMemoryWait {
            throw PhotomemoError(.busy, "no decode memory free now (\(wait.reason)); run verify --repair again later")
        }
        return Dictionary(made.map { ($0.0.name, $0.1) }, uniquingKeysWith: { a, _ in a })
    }
}
