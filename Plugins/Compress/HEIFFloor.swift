import Foundation
import HEIF

/// The decode floor of a HEIF photo, for photomemo-bench: every tile decoded to YCbCr by
/// one decoder on this thread, the planes discarded. What any HEIC path must pay.
public enum HEIFFloor {
    public enum Decoder: String, Sendable { case libde265, libavcodec }

    /// Decodes every tile of the primary image; returns the tiles decoded.
    public static func decodeTiles(_ data: Data, with decoder: Decoder) throws -> Int {
        try data.withUnsafeBytes { bytes in
            let file = try HEIFFile.parse(bytes)
            var checksum = 0
            switch decoder {
            case .libde265:
                let d = try De265Decoder(file.hevc, bytes: bytes)
                for tile in file.tiles { try d.decode(tile) { checksum &+= Int($0.y[0]) } }
            case .libavcodec:
                let d = try HEVCDecoder(file.hevc, bytes: bytes)
                for tile in file.tiles { try d.decode(tile) { checksum &+= Int($0.y[0]) } }
            }
            return file.tiles.count + (checksum & 0)
        }
    }
}
