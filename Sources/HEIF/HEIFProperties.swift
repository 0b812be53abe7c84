/// The item properties compress reads; others are kept as `.other`.
enum Property {
    case size(Int, Int)                       // ispe
    case hevc(HEVCConfig)                     // hvcC
    case transform(HEIFFile.Transform)        // irot, imir
    case cleanAperture                        // clap
    case icc(Range<Int>)                      // colr prof / rICC
    case nclx(matrix: Int, fullRange: Bool)   // colr nclx
    case auxiliary(String)                    // auxC: what an auxiliary image is (its URN)
    case av1(CodedSize?)                // av1C: the largest frame its sequence headers allow
    case other

    init(_ box: (type: String, payload: BoxReader)) throws {
        var b = box.payload
        switch box.type {
        case "ispe":
            _ = try b.versionFlags()
            self = .size(try b.u32(), try b.u32())
        case "hvcC": self = .hevc(try HEVCConfig(b))
        case "av1C":
            try b.skip(4)  // marker, version, profile, level, tier, bit depth, subsampling, delay
            self = .av1(CodedSize.largest(AV1PictureSize.inBand(UnsafeRawBufferPointer(rebasing: b.bytes[b.position..<b.end]))))
        case "irot": self = .transform(.rotate(quarterTurnsAnticlockwise: try b.u8() & 3))
        case "imir": self = .transform(.mirror(topToBottom: try b.u8() & 1 == 0))
        case "clap": self = .cleanAperture
        case "auxC":
            _ = try b.versionFlags()
            self = .auxiliary(try b.cString())
        case "colr":
            switch try b.fourCC() {
            case "prof", "rICC": self = b.left > 0 ? .icc(b.position..<b.end) : .other
            case "nclx":
                try b.skip(4)  // primaries, transfer: the ICC profile or sRGB speaks for them
                self = .nclx(matrix: try b.u16(), fullRange: try b.u8() & 0x80 != 0)
            default: self = .other
            }
        default: self = .other
        }
    }

    var size: (Int, Int)? { if case .size(let w, let h) = self { (w, h) } else { nil } }
    var hevc: HEVCConfig? { if case .hevc(let c) = self { c } else { nil } }
    var transform: HEIFFile.Transform? { if case .transform(let t) = self { t } else { nil } }
    var auxiliary: String? { if case .auxiliary(let t) = self { t } else { nil } }
}

/// An `hvcC` box: the HEVC stream's format and its parameter sets (VPS, SPS, PPS), which a
/// decoder takes once before the tiles' data.
public struct HEVCConfig: Sendable, Equatable {
    /// 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4.
    public let chromaFormat: Int
    public let bitDepthLuma: Int
    public let bitDepthChroma: Int
    /// Bytes of the length before each NAL unit in a tile's data (1, 2 or 4).
    public let lengthSize: Int
    /// Each parameter-set NAL unit (without a length or start code).
    public let parameterSets: [Range<Int>]
    /// The whole hvcC payload (libavcodec's extradata).
    public let record: Range<Int>
    /// The largest picture size its SPS code (`HEVCPictureSize`; a decoder keeps the last
    /// of an id, so the first is not enough), nil without a readable one.
    public let codedSize: CodedSize?

    init(_ box: BoxReader) throws {
        var b = box
        record = box.position..<box.end
        try b.skip(16)
        chromaFormat = try b.u8() & 3
        bitDepthLuma = try b.u8() & 7 + 8
        bitDepthChroma = try b.u8() & 7 + 8
        try b.skip(2)
        lengthSize = try b.u8() & 3 + 1
        guard lengthSize != 3 else { throw HEIFFile.Problem("hvcC NAL length size 3") }
        var sets: [Range<Int>] = []
        for _ in 0..<(try b.u8()) {
            try b.skip(1)  // completeness and NAL unit type: the NAL header says it again
            for _ in 0..<(try b.u16()) {
                let n = try b.u16()
                sets.append(try b.range(b.position, n))
                try b.skip(n)
            }
        }
        parameterSets = sets
        codedSize = CodedSize.largest(sets.compactMap { HEVCPictureSize.read(UnsafeRawBufferPointer(rebasing: box.bytes[$0])) })
    }
}

extension HEIFFile {
    /// How YCbCr becomes RGB, and the ICC profile the RGB is in.
    public struct Colour: Sendable {
        /// `colr prof`/`rICC`: the embedded ICC profile's bytes.
        public let icc: Range<Int>?
        /// `colr nclx`: matrix coefficients (ISO/IEC 23091-2) and full range; nil when absent.
        public let matrix: Int?
        public let fullRange: Bool?

        init(_ props: [Property]) {
            icc = props.lazy.compactMap { if case .icc(let r) = $0 { r } else { nil } }.first
            let nclx = props.lazy.compactMap { if case .nclx(let m, let f) = $0 { (m, f) } else { nil } }.first
            matrix = nclx?.0
            fullRange = nclx?.1
        }
    }
}
