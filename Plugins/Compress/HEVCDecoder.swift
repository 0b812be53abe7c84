import CAVCodec
import HEIF

/// libavcodec's HEVC decoder for a HEIF photo's tiles: ONE decoder for all of them (the
/// `hvcC` record as its extradata, then each tile's length-prefixed NAL units as a packet),
/// one thread (photos run in parallel instead). libheif, under libvips' heifload, makes a
/// libde265 decoder and a thread per tile; libavcodec took 0.66-0.72x libde265's CPU on the
/// same tiles (docs/benchmarks.md). Each tile is an intra picture, handed out as soon as it
/// is decoded, so the decoder holds about one tile.
final class HEVCDecoder {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// A decoded tile's planes (8-bit 4:2:0), valid only during the `decode` callback.
    struct Planes {
        let y: UnsafePointer<UInt8>, cb: UnsafePointer<UInt8>, cr: UnsafePointer<UInt8>
        let yStride: Int, cStride: Int
        let width: Int, height: Int
    }

    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private let bytes: UnsafeRawBufferPointer
    /// A tile's data with libavcodec's zeroed padding after it (its readers may overread).
    private var buffer: [UInt8] = []

    private static let quiet: Void = av_log_set_level(AV_LOG_QUIET)  // failures are reported as Failure

    /// `tile`: the size every picture has (`ispe`); libavcodec allocates no larger one
    /// (rounded up to 64, as a coded size may be), whatever the stream says.
    init(_ config: HEVCConfig, tile: (width: Int, height: Int), bytes: UnsafeRawBufferPointer) throws {
        Self.quiet
        self.bytes = bytes
        guard let codec = avcodec_find_decoder(AV_CODEC_ID_HEVC), let c = avcodec_alloc_context3(codec),
              let extradata = av_mallocz(config.record.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
            throw Failure(description: "libavcodec has no HEVC decoder")
        }
        context = c
        packet = av_packet_alloc()
        frame = av_frame_alloc()
        extradata.copyMemory(from: bytes.baseAddress! + config.record.lowerBound, byteCount: config.record.count)
        c.pointee.extradata = extradata.assumingMemoryBound(to: UInt8.self)
        c.pointee.extradata_size = Int32(config.record.count)
        c.pointee.thread_count = 1
        c.pointee.max_pixels = Int64((tile.width + 63) & ~63) * Int64((tile.height + 63) & ~63)
        // Damage is an error, not a concealed picture: libvips (fail_on=warning) then decides.
        c.pointee.err_recognition = AV_EF_EXPLODE | AV_EF_BITSTREAM | AV_EF_BUFFER
        guard packet != nil, frame != nil, avcodec_open2(c, codec, nil) == 0 else { throw Failure(description: "cannot open libavcodec's HEVC decoder") }
    }

    deinit {
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&context)  // frees the extradata too
    }

    /// Decodes one tile from its extents (concatenated) and passes its planes to `body`. An
    /// error from libavcodec is a `Failure`: the stage then decodes the photo with libvips,
    /// which decides whether the damage is fatal.
    func decode(_ extents: [Range<Int>], _ body: (Planes) throws -> Void) throws {
        guard let context, let packet, let frame else { throw Failure(description: "no decoder") }
        buffer.removeAll(keepingCapacity: true)
        for r in extents { buffer.append(contentsOf: bytes[r]) }
        buffer.append(contentsOf: repeatElement(0, count: Int(AV_INPUT_BUFFER_PADDING_SIZE)))
        guard let size = Int32(exactly: buffer.count - Int(AV_INPUT_BUFFER_PADDING_SIZE)) else { throw Failure(description: "tile too large") }
        var got = false
        try buffer.withUnsafeMutableBufferPointer { data in
            packet.pointee.data = data.baseAddress
            packet.pointee.size = size
            defer { packet.pointee.data = nil; packet.pointee.size = 0 }
            // The tile, then the end of the stream: its picture comes out now, not held for reordering.
            var rc = avcodec_send_packet(context, packet)
            if rc == 0 { rc = avcodec_send_packet(context, nil) }
            guard rc == 0 else { throw Failure(description: "libavcodec refused a tile (\(rc))") }
            while true {
                rc = avcodec_receive_frame(context, frame)
                if rc == pm_av_eof() { break }
                guard rc == 0 else { throw Failure(description: "libavcodec cannot decode a tile (\(rc))") }
                defer { av_frame_unref(frame) }
                guard !got else { throw Failure(description: "a tile holds more than one picture") }
                got = true
                try body(try Self.planes(frame))
            }
        }
        // Ready for the next tile: the parameter sets stay, the end of the stream goes.
        avcodec_flush_buffers(context)
        guard got else { throw Failure(description: "a tile decoded to no picture") }
    }

    private static func planes(_ f: UnsafeMutablePointer<AVFrame>) throws -> Planes {
        let format = AVPixelFormat(rawValue: f.pointee.format)
        guard format == AV_PIX_FMT_YUV420P || format == AV_PIX_FMT_YUVJ420P, f.pointee.decode_error_flags == 0 else {
            throw Failure(description: "tile is not 8-bit 4:2:0, or damaged")
        }
        guard let y = f.pointee.data.0, let cb = f.pointee.data.1, let cr = f.pointee.data.2, f.pointee.linesize.1 == f.pointee.linesize.2 else {
            throw Failure(description: "tile has no planes")
        }
        return Planes(y: y, cb: cb, cr: cr, yStride: Int(f.pointee.linesize.0), cStride: Int(f.pointee.linesize.1),
                      width: Int(f.pointee.width), height: Int(f.pointee.height))
    }
}
