import Foundation
import HEIF

/// The decode floor of a HEIF photo for photomemo-bench, with compress's own decoder: every
/// tile decoded to YCbCr by one libavcodec decoder on this thread, the planes discarded.
/// What any HEIC path must pay (the bench's libde265 row, `De265Floor`, is its second floor).
public enum HEIFFloor {
    /// Decodes every tile of the primary image; returns the tiles decoded.
    public static func decodeTiles(_ data: Data) throws -> Int {
        try data.withUnsafeBytes { bytes in
            let file = try HEIFFile.parse(bytes)
            var checksum = 0
            let d = try HEVCDecoder(file.hevc, tile: (file.tileWidth, file.tileHeight), bytes: bytes)
            for tile in file.tiles { try d.decode(tile) { checksum &+= Int($0.y[0]) } }
            return file.tiles.count + (checksum & 0)
        }
    }
}
