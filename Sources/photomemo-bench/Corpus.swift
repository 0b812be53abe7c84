import CVips
import Foundation
import PhotomemoCore

/// Realistic 12 MP JPEGs (4032x3024, smooth colour plus sensor-like noise, ~3-5 MB at
/// Q92) in mixed EXIF orientations, generated once and reused from the same folder.
enum Corpus {
    static let orientations: [Int32] = [1, 6, 1, 8, 1, 3]

    static func make(in dir: String, count: Int) throws -> [String] {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        guard vips_init("photomemo-bench") == 0 else { throw Failure("libvips did not start") }
        var files: [String] = []
        for i in 0..<count {
            let path = dir + String(format: "/photo-%03d.jpg", i)
            if !FileManager.default.fileExists(atPath: path) {
                StandardStream.err("generating \(path)\r")
                guard pm_vips_synthetic_photo(path, 4032, 3024, orientations[i % orientations.count], Int32(i), 92) == 0 else {
                    throw Failure("cannot generate \(path): \(String(cString: vips_error_buffer()))")
                }
            }
            files.append(path)
        }
        return files
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ d: String) { description = d }
    }
}
