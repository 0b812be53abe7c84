/// The picture size an HEVC sequence parameter set codes (`pic_width_in_luma_samples` x
/// `pic_height_in_luma_samples`): what a decoder allocates for every picture of the stream,
/// whatever the item's `ispe` says. A HEIC whose 64x64 `ispe` fronted an 8192x8192 stream
/// made the decoders (libavcodec here, libde265 under libheif) allocate and decode the
/// large picture for each of the grid's references to it: hours of CPU and memory no
/// budget saw. nil when the NAL unit is no SPS or ends before the size.
enum HEVCPictureSize {
    static func read(_ nal: UnsafeRawBufferPointer) -> (width: Int, height: Int)? {
        guard nal.count > 2, (nal[0] >> 1) & 0x3F == 33 else { return nil }  // NAL type 33: SPS
        var bits = BitReader(nal, from: 2, dropsEmulationPrevention: true)
        guard bits.skip(4), let maxSubLayersMinus1 = bits.read(3), bits.skip(1) else { return nil }
        // profile_tier_level(1, maxSubLayersMinus1): the general part, then the sub-layers'.
        guard bits.skip(96) else { return nil }
        var present: [(profile: Bool, level: Bool)] = []
        for _ in 0..<maxSubLayersMinus1 {
            guard let p = bits.read(1), let l = bits.read(1) else { return nil }
            present.append((p == 1, l == 1))
        }
        if maxSubLayersMinus1 > 0, !bits.skip(2 * (8 - maxSubLayersMinus1)) { return nil }
        for p in present {
            if p.profile, !bits.skip(88) { return nil }
            if p.level, !bits.skip(8) { return nil }
        }
        guard bits.golomb() != nil, let chroma = bits.golomb() else { return nil }  // sps id, chroma_format_idc
        if chroma == 3, !bits.skip(1) { return nil }  // separate_colour_plane_flag
        guard let width = bits.golomb(), let height = bits.golomb() else { return nil }
        return (width, height)
    }

    /// The sizes the SPS among `data`'s NAL units (each after a `lengthSize`-byte length, as
    /// in a HEIF item) code: a decoder takes an SPS in the stream over the one in `hvcC`.
    static func inBand(_ data: UnsafeRawBufferPointer, lengthSize: Int) -> [(width: Int, height: Int)] {
        var sizes: [(width: Int, height: Int)] = [], i = 0
        while i + lengthSize <= data.count {
            var length = 0
            for k in 0..<lengthSize { length = length << 8 | Int(data[i + k]) }
            i += lengthSize
            guard length <= data.count - i else { break }
            if let size = read(UnsafeRawBufferPointer(rebasing: data[i..<(i + length)])) { sizes.append(size) }
            i += length
        }
        return sizes
    }
}

/// Bytes as bits, most significant first, every read checked against the end (nil past
/// it); an HEVC NAL unit's emulation-prevention bytes (00 00 03) dropped when asked.
struct BitReader {
    let bytes: UnsafeRawBufferPointer
    let dropsEmulationPrevention: Bool
    var index: Int
    var zeros = 0
    var current = 0, left = 0

    init(_ bytes: UnsafeRawBufferPointer, from start: Int, dropsEmulationPrevention: Bool = false) {
        self.bytes = bytes
        self.dropsEmulationPrevention = dropsEmulationPrevention
        index = start
    }

    mutating func bit() -> Int? {
        if left == 0 {
            guard index < bytes.count else { return nil }
            var byte = Int(bytes[index])
            index += 1
            if dropsEmulationPrevention, zeros >= 2, byte == 3 {
                zeros = 0
                guard index < bytes.count else { return nil }
                byte = Int(bytes[index])
                index += 1
            }
            zeros = byte == 0 ? zeros + 1 : 0
            (current, left) = (byte, 8)
        }
        left -= 1
        return (current >> left) & 1
    }

    /// `n` bits (at most 32), most significant first.
    mutating func read(_ n: Int) -> Int? {
        var v = 0
        for _ in 0..<n {
            guard let b = bit() else { return nil }
            v = v << 1 | b
        }
        return v
    }

    mutating func skip(_ n: Int) -> Bool {
        for _ in 0..<n where bit() == nil { return false }
        return true
    }

    /// The zero bits before the next 1 (the 1 read too): an Exp-Golomb code's prefix; nil
    /// past the end, or past `limit` zeros.
    private mutating func zerosBeforeOne(limit: Int = .max) -> Int? {
        var n = 0
        while true {
            guard let b = bit() else { return nil }
            if b == 1 { return n }
            n += 1
            guard n <= limit else { return nil }
        }
    }

    /// uvlc() (AV1 4.10.3): like ue(v), but every leading zero is read, and 32 or more of
    /// them are the largest value with no bits after (as a decoder reads it: a reader that
    /// stopped early would read the fields after it from the wrong bits).
    mutating func uvlc() -> Int? {
        guard let leading = zerosBeforeOne() else { return nil }
        if leading >= 32 { return Int(UInt32.max) }
        guard let rest = read(leading) else { return nil }
        return (1 << leading) - 1 + rest
    }

    /// ue(v), Exp-Golomb: at most 31 leading zeros (a larger value is no size anyone codes).
    mutating func golomb() -> Int? {
        guard let leading = zerosBeforeOne(limit: 31), let rest = read(leading) else { return nil }
        return (1 << leading) - 1 + rest
    }
}
