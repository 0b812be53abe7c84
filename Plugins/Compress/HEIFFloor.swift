import Foundation
import HEIF

/// The decode floor of a HEIF photo, for photomemo-bench: every tile decoded to YCbCr by
/// one libde265 decoder on this thread, the planes discarded. What any HEIC path must pay.
public enum HEIFFloor {
    /// Decodes every tile of the primary image; returns the tiles decoded.
    public static func decodeTiles(_ data: Data) throws -> Int {
        try data.withUnsafeBytes { bytes in
            let file = try HEIFFile.parse(bytes)
            let decoder = try HEVCDecoder(file.hevc, bytes: bytes)
            var checksum = 0
            for tile in file.tiles { try decoder.decode(tile) { checksum &+= Int($0.y[0]) } }
            return file.tiles.count + (checksum & 0)
        }
    }
}
