import Foundation

/// A stage that makes renditions from an original (`compress`): `verify --repair` asks
/// the definition's stage that conforms to make a record's damaged or missing renditions
/// again, through the same code a job's run uses.
public protocol RenditionMaker: Sendable {
    /// Every rendition the stage's options name, by name, made from `photo`.
    func renditions(of photo: PhotoBytes) throws -> [String: Data]
}
