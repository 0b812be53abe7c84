/// The picture size a stream codes, whatever an item's `ispe` says: the largest of `sizes`.
public struct CodedSize: Sendable, Equatable {
    public let width: Int, height: Int

    /// The widest and the tallest of `sizes` (nil for none).
    static func largest(_ sizes: [(width: Int, height: Int)]) -> CodedSize? {
        sizes.isEmpty ? nil : CodedSize(width: sizes.map(\.width).max()!, height: sizes.map(\.height).max()!)
    }
}

/// The largest frame an AV1 sequence header allows (`max_frame_width_minus_1 + 1` x
/// `max_frame_height_minus_1 + 1`): what dav1d may decode for an AVIF item, as
/// `HEVCPictureSize` is for HEVC.
enum AV1PictureSize {
    /// The sizes of every sequence header among `data`'s OBUs (`av1C`'s configOBUs, or an
    /// item's data: each OBU with its size, as AVIF stores them).
    static func inBand(_ data: UnsafeRawBufferPointer) -> [(width: Int, height: Int)] {
        var sizes: [(width: Int, height: Int)] = [], i = 0
        while i < data.count {
            let header = Int(data[i])
            i += 1 + (header & 0x04 != 0 ? 1 : 0)  // obu_extension_flag: one more byte
            var size = data.count - i
            if header & 0x02 != 0 {  // obu_has_size_field: leb128
                size = 0
                var shift = 0
                while true {
                    guard i < data.count, shift < 56 else { return sizes }
                    let byte = Int(data[i])
                    i += 1
                    size |= (byte & 0x7F) << shift
                    shift += 7
                    if byte & 0x80 == 0 { break }
                }
            }
            guard i <= data.count, size <= data.count - i else { return sizes }
            if (header >> 3) & 0x0F == 1, let s = sequenceHeader(UnsafeRawBufferPointer(rebasing: data[i..<(i + size)])) { sizes.append(s) }
            i += size
        }
        return sizes
    }

    /// AV1 5.5.1: `sequence_header_obu` up to `max_frame_height_minus_1`.
    static func sequenceHeader(_ payload: UnsafeRawBufferPointer) -> (width: Int, height: Int)? {
        var b = BitReader(payload, from: 0)
        guard b.skip(4), let reduced = b.read(1) else { return nil }  // seq_profile, still_picture
        if reduced == 1 {
            guard b.skip(5) else { return nil }  // seq_level_idx[0]
        } else {
            guard let timing = b.read(1) else { return nil }
            var decoderModel = 0, bufferDelayLength = 0
            if timing == 1 {
                guard b.skip(64), let equal = b.read(1) else { return nil }  // display tick, time scale
                if equal == 1, b.uvlc() == nil { return nil }
                guard let model = b.read(1) else { return nil }
                decoderModel = model
                if model == 1 {
                    guard let delay = b.read(5), b.skip(32 + 5 + 5) else { return nil }
                    bufferDelayLength = delay + 1
                }
            }
            guard let initialDelay = b.read(1), let points = b.read(5) else { return nil }
            for _ in 0...points {
                guard b.skip(12), let level = b.read(5) else { return nil }  // operating_point_idc, seq_level_idx
                if level > 7, !b.skip(1) { return nil }  // seq_tier
                if decoderModel == 1 {
                    guard let present = b.read(1) else { return nil }
                    if present == 1, !b.skip(2 * bufferDelayLength + 1) { return nil }
                }
                if initialDelay == 1 {
                    guard let present = b.read(1) else { return nil }
                    if present == 1, !b.skip(4) { return nil }
                }
            }
        }
        guard let widthBits = b.read(4), let heightBits = b.read(4),
              let width = b.read(widthBits + 1), let height = b.read(heightBits + 1) else { return nil }
        return (width + 1, height + 1)
    }
}
