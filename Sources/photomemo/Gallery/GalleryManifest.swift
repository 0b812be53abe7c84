import Foundation
import PhotomemoCore

/// `DIR/.gallery.json`: for each record shown, what its page was made from (its change
/// tag and those of the records it links to) and the asset files it uses.
struct GalleryManifest: Codable, Equatable {
    static let fileName = ".gallery.json"
    /// Pages are rewritten when the program that made them differs (a new version may
    /// shape them differently); `currentFormat` is bumped for changes within a version.
    static let currentFormat = 1
    static let currentGenerator = "photomemo \(PhotomemoVersion.current), pages \(currentFormat)"

    struct Entry: Codable, Equatable {
        var tag: String
        var refs: [String: String]
        var assets: [String]
        var page: String
    }

    var generator = currentGenerator
    var records: [String: Entry] = [:]

    static func load(from folder: GalleryFolder) -> GalleryManifest {
        guard let bytes = try? folder.top.contents(fileName),
              let m = try? JSONDecoder().decode(GalleryManifest.self, from: Data(bytes)), m.generator == currentGenerator else { return GalleryManifest() }
        return m
    }

    func save(to folder: GalleryFolder) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try folder.write(String(decoding: try encoder.encode(self), as: UTF8.self) + "\n", to: Self.fileName, in: folder.top)
    }
}
