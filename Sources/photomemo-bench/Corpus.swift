import CompressStage
import Foundation
import StageKit

/// Realistic 12 MP JPEGs (4032x3024, smooth colour plus sensor-like noise, ~3-5 MB at
/// Q92) in mixed EXIF orientations, generated once and reused from the same folder;
/// `--48mp` makes 48 MP ones (8064x6048) the same way.
enum Corpus {
    static let orientations = [1, 6, 1, 8, 1, 3]

    static func make(in dir: String, count: Int, width: Int = 4032, height: Int = 3024) throws -> [String] {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var files: [String] = []
        for i in 0..<count {
            let path = dir + String(format: "/photo-%03d.jpg", i)
            if !FileManager.default.fileExists(atPath: path) {
                StandardStream.err("generating \(path)\r")
                try SyntheticPhoto.write(to: path, width: width, height: height, orientation: orientations[i % orientations.count],
                                         seed: i, quality: 92)
            }
            files.append(path)
        }
        return files
    }
}
