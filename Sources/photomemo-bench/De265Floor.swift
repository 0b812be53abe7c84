import CDe265
import Foundation
import HEIF

/// The bench's second HEIC floor: libde265 decoding a HEIF photo's tiles, ONE decoder for
/// all of them (the parameter sets pushed once, then each tile's NAL units), on the calling
/// thread, the planes discarded. libheif, under libvips' heifload, makes a decoder and a
/// thread per tile. Compress decodes with libavcodec (`HEIFFloor` is its floor), measured
/// faster on the same tiles; this row shows by how much.
final class De265Floor {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Decodes every tile of the primary image of `data`; returns the tiles decoded.
    static func decodeTiles(_ data: Data) throws -> Int {
        try data.withUnsafeBytes { bytes in
            let file = try HEIFFile.parse(bytes)
            let d = try De265Floor(file.hevc, bytes: bytes)
            var checksum = 0
            for tile in file.tiles { try d.decode(tile) { checksum &+= Int($0[0]) } }
            return file.tiles.count + (checksum & 0)
        }
    }

    private let context: UnsafeMutableRawPointer
    private let bytes: UnsafeRawBufferPointer
    private let lengthSize: Int

    init(_ config: HEVCConfig, bytes: UnsafeRawBufferPointer) throws {
        guard let c = de265_new_decoder() else { throw Failure(description: "libde265 cannot make a decoder") }
        context = c
        self.bytes = bytes
        lengthSize = config.lengthSize
        for r in config.parameterSets { try push(UnsafeRawBufferPointer(rebasing: bytes[r])) }
    }

    deinit { de265_free_decoder(context) }

    private func push(_ nal: UnsafeRawBufferPointer) throws {
        guard let base = nal.baseAddress, let n = Int32(exactly: nal.count) else { return }
        let err = de265_push_NAL(context, base, n, 0, nil)
        guard err == DE265_OK else { throw Failure(description: String(cString: de265_get_error_text(err))) }
    }

    /// Decodes one tile from its extents (concatenated when there are several) and passes
    /// its luma plane to `body`. Any error or warning from libde265 is a `Failure`.
    private func decode(_ extents: [Range<Int>], _ body: (UnsafePointer<UInt8>) throws -> Void) throws {
        if extents.count == 1 {
            try decode(UnsafeRawBufferPointer(rebasing: bytes[extents[0]]), body)
        } else {
            let joined = extents.flatMap { bytes[$0] }
            try joined.withUnsafeBytes { try decode($0, body) }
        }
    }

    private func decode(_ data: UnsafeRawBufferPointer, _ body: (UnsafePointer<UInt8>) throws -> Void) throws {
        // Length-prefixed NAL units (hvcC's lengthSize), each pushed without its length.
        var at = 0
        while at < data.count {
            guard data.count - at >= lengthSize else { throw Failure(description: "tile data ends inside a NAL length") }
            var n = 0
            for i in 0..<lengthSize { n = n << 8 | Int(data[at + i]) }
            at += lengthSize
            guard n <= data.count - at else { throw Failure(description: "NAL unit of \(n) bytes, \(data.count - at) left") }
            try push(UnsafeRawBufferPointer(rebasing: data[at..<(at + n)]))
            at += n
        }
        // The end of the stream: the picture is decoded and output now, not held for reordering.
        guard de265_flush_data(context) == DE265_OK else { throw Failure(description: "libde265 cannot flush") }
        var more: Int32 = 1, got = false
        while more != 0 {
            let err = de265_decode(context, &more)
            guard err == DE265_OK || err == DE265_ERROR_WAITING_FOR_INPUT_DATA else {
                throw Failure(description: String(cString: de265_get_error_text(err)))
            }
            while let image = de265_peek_next_picture(context) {
                defer { de265_release_next_picture(context) }
                guard !got else { throw Failure(description: "a tile holds more than one picture") }
                got = true
                try body(try Self.luma(image))
            }
            if err == DE265_ERROR_WAITING_FOR_INPUT_DATA { break }
        }
        let warning = de265_get_warning(context)
        guard warning == DE265_OK else { throw Failure(description: String(cString: de265_get_error_text(warning))) }
        guard got else { throw Failure(description: "a tile decoded to no picture") }
        // Ready for the next tile: the parameter sets stay, the end of stream goes.
        de265_reset(context)
    }

    private static func luma(_ image: OpaquePointer) throws -> UnsafePointer<UInt8> {
        guard de265_get_chroma_format(image) == de265_chroma_420, (0..<3).allSatisfy({ de265_get_bits_per_pixel(image, Int32($0)) == 8 }) else {
            throw Failure(description: "tile is not 8-bit 4:2:0")
        }
        var stride: Int32 = 0
        guard let y = de265_get_image_plane(image, 0, &stride) else { throw Failure(description: "tile has no planes") }
        return y
    }
}
