import CVips
import Foundation
import PhotomemoCore
import StageKit

/// The libvips calls compress makes, wrapped once: an owned image reference, process
/// setup, and errors. libvips' error buffer is process-wide (messages from parallel
/// photos mix), so return codes decide and the buffer only adds detail.
final class VipsImageRef {
    let ptr: UnsafeMutablePointer<VipsImage>
    /// The photo's bytes an image decoded from memory still reads (libvips does not copy
    /// them); every image made from it holds them too.
    let source: PhotoBytes?

    init(_ ptr: UnsafeMutablePointer<VipsImage>, source: PhotoBytes? = nil) {
        self.ptr = ptr
        self.source = source
    }
    deinit { pm_vips_unref(ptr) }

    var width: Int { Int(vips_image_get_width(ptr)) }
    var height: Int { Int(vips_image_get_height(ptr)) }
    var orientation: Int { Int(vips_image_get_orientation(ptr)) }
    var bands: Int { Int(vips_image_get_bands(ptr)) }
    /// An integer field (`jpeg-multiscan`: a progressive JPEG), or nil.
    func int(_ field: String) -> Int? {
        var out: Int32 = 0
        return has(field) && vips_image_get_int(ptr, field, &out) == 0 ? Int(out) : nil
    }
    var hasAlpha: Bool { pm_vips_has_alpha(ptr) != 0 }
    var interpretation: String { String(cString: pm_vips_interpretation(ptr)) }
    var isUchar: Bool { pm_vips_is_uchar(ptr) != 0 }
    func has(_ field: String) -> Bool { pm_vips_has_field(ptr, field) != 0 }

    /// A metadata string field, e.g. "exif-ifd0-Make" → "Canon (Canon, ASCII, 6 components, 6 bytes)".
    func string(_ field: String) -> String? {
        guard has(field) else { return nil }
        var out: UnsafePointer<CChar>?
        guard vips_image_get_string(ptr, field, &out) == 0, let out else { return nil }
        return String(cString: out)
    }

    /// Applies one libvips operation that produces a new image.
    func then(_ what: String, _ op: (UnsafeMutablePointer<VipsImage>, UnsafeMutablePointer<UnsafeMutablePointer<VipsImage>?>) -> Int32) throws -> VipsImageRef {
        var out: UnsafeMutablePointer<VipsImage>?
        guard op(ptr, &out) == 0, let out else { throw Vips.error(what) }
        return VipsImageRef(out, source: source)
    }

    // The operations compress applies, each a new image.
    func flattenedOnWhite() throws -> VipsImageRef { try then("flatten") { pm_vips_flatten_white($0, $1) } }
    func iccToSRGB() throws -> VipsImageRef { try then("colour transform") { pm_vips_icc_to_srgb($0, $1) } }
    func inSRGB() throws -> VipsImageRef { try then("colour conversion") { pm_vips_colourspace_srgb($0, $1) } }
    func castToUchar() throws -> VipsImageRef { try then("8-bit conversion") { pm_vips_cast_uchar($0, $1) } }
    /// The rectangle's pixels, computed now (`pm_vips_crop_memory`).
    func cropped(left: Int32, top: Int32, width: Int32, height: Int32) throws -> VipsImageRef {
        let input = try inMemory()
        return try input.then("crop") { pm_vips_crop_memory($0, $1, left, top, width, height) }
    }

    /// The names of the image's metadata fields.
    var fieldNames: [String] {
        guard let fields = vips_image_get_fields(ptr) else { return [] }
        defer { g_strfreev(fields) }
        var names: [String] = []
        var i = 0
        while let f = fields[i] {
            names.append(String(cString: f))
            i += 1
        }
        return names
    }

    func remove(field: String) { vips_image_remove(ptr, field) }

    /// Computes the pixels into memory (where decode errors surface).
    func inMemory() throws -> VipsImageRef {
        guard let m = vips_image_copy_memory(ptr) else { throw Vips.error("decode") }
        return VipsImageRef(m, source: source)
    }

    /// This image resampled to `width` x `height` by `Resampler` (8-bit images only;
    /// the stage converts others to 8-bit first), then turned upright for EXIF
    /// `orientation` as `uprighted` does, in the same pass. Computes the pixels.
    func resampled(width w: Int, height h: Int, orientation: Int = 1) throws -> VipsImageRef {
        precondition(isUchar, "Resampler takes 8-bit pixels")
        let (uw, uh) = Orientation.uprightSize(width: w, height: h, orientation: orientation)
        // The stage checked the size against its pixel limit; a side past Int32 is an error, not a trap.
        guard let w32 = Int32(exactly: uw), let h32 = Int32(exactly: uh), w > 0, h > 0 else {
            throw Vips.Failure(description: "resize to \(w)x\(h) is out of range")
        }
        let input = try inMemory()
        guard let out = pm_vips_new_memory_like(input.ptr, w32, h32) else { throw Vips.error("resize") }
        Resampler.resample(pm_vips_pixels(input.ptr), width: input.width, height: input.height, bands: Int(pm_vips_bands(ptr)),
                           into: pm_vips_pixels(out), outWidth: w, outHeight: h, orientation: orientation)
        if orientation != 1 { pm_vips_set_upright(out, (5...8).contains(orientation) ? 1 : 0) }
        return VipsImageRef(out)
    }

    /// This image turned upright for EXIF `orientation` (`Orientation`; 8-bit pixels),
    /// with no orientation left in its metadata.
    func uprighted(orientation: Int) throws -> VipsImageRef {
        precondition(isUchar, "Orientation takes 8-bit pixels")
        let input = try inMemory()
        let (w, h) = Orientation.uprightSize(width: input.width, height: input.height, orientation: orientation)
        guard let out = pm_vips_new_memory_like(input.ptr, Int32(w), Int32(h)) else { throw Vips.error("rotate") }
        Orientation.upright(pm_vips_pixels(input.ptr), width: input.width, height: input.height, bands: Int(pm_vips_bands(input.ptr)),
                            orientation: orientation, into: pm_vips_pixels(out))
        pm_vips_set_upright(out, (5...8).contains(orientation) ? 1 : 0)
        return VipsImageRef(out)
    }

    /// A stripped 8-bit gray or RGB JPEG is encoded by libjpeg-turbo straight from memory
    /// (`pm_jpeg_encode`); anything else by libvips, which also writes kept metadata.
    func encode(_ format: Rendition.Format, quality: Int, strip: Bool) throws -> Data {
        if format == .jpeg, strip, isUchar, [1, 3].contains(pm_vips_bands(ptr)) {
            let image = try inMemory()
            var out: UnsafeMutablePointer<UInt8>?
            var len: UInt = 0
            var message = [CChar](repeating: 0, count: 256)
            guard pm_jpeg_encode(image.ptr, Int32(clamping: quality), &out, &len, &message, message.count) == 0, let out else {
                throw Vips.Failure(description: "encode jpeg failed: \(Vips.text(message))")
            }
            defer { free(out) }
            return Data(bytes: out, count: Int(len))
        }
        var buf: UnsafeMutableRawPointer?
        var len = 0
        let rc = switch format {
        case .jpeg: pm_vips_jpegsave_buffer(ptr, &buf, &len, Int32(clamping: quality), strip ? 1 : 0)
        case .webp: pm_vips_webpsave_buffer(ptr, &buf, &len, Int32(clamping: quality), strip ? 1 : 0)
        }
        guard rc == 0, let buf else { throw Vips.error("encode \(format.rawValue)") }
        defer { pm_vips_free(buf) }
        return Data(bytes: buf, count: len)
    }
}

enum Vips {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private static let started: Bool = {
        // Bounded arenas keep RSS flat with a photo per core (PLATFORM.md: 275→324 MB creep otherwise).
        guard pm_vips_init("photomemo") == 0 else { return false }
        // libvips' warnings (a damaged file's details: "IDAT: invalid distance too far back")
        // went to stderr as GLib's own lines, blank lines between, outside the log's format.
        // A warning fails the decode, and the stage's failure says why: the detail is debug.
        let levels = G_LOG_LEVEL_WARNING.rawValue | G_LOG_LEVEL_MESSAGE.rawValue | G_LOG_LEVEL_INFO.rawValue | G_LOG_LEVEL_DEBUG.rawValue
        g_log_set_handler("VIPS", GLogLevelFlags(rawValue: levels), { _, _, message, _ in
            Log.debug("libvips: \(message.map { String(cString: $0) } ?? "")")
        }, nil)
        return true
    }()

    static func start() throws {
        guard started else { throw PhotomemoError(.internalError, "libvips failed to start") }
    }

    static func error(_ what: String) -> Failure {
        // Every line: libheif's reason ("Missing grid images: …") follows libvips' own
        // ("source: bad seek to …"). The buffer is the process's, so another thread's error
        // can be in it too: a few lines at most.
        var lines: [Substring] = []
        for line in String(cString: vips_error_buffer()).split(separator: "\n") where !lines.contains(line) { lines.append(line) }
        let detail = String(lines.prefix(4).joined(separator: "; ").prefix(600))
        vips_error_clear()
        return Failure(description: detail.isEmpty ? "\(what) failed" : "\(what) failed: \(detail)")
    }

    /// A C function's message buffer (NUL-terminated) as text.
    static func text(_ message: [CChar]) -> String {
        String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The loader libvips picks by content ("jpegload_buffer", ...), or nil.
    static func loader(for photo: PhotoBytes) -> String? {
        guard started else { return nil }
        return pm_vips_loader_buffer(photo.bytes.baseAddress, photo.count).map { String(cString: $0) }
    }

    /// libvips started first, whoever calls: a load racing another thread's start found
    /// the loaders its modules add (heifload) missing — "buffer is not in a known format".
    static func open(_ photo: PhotoBytes) throws -> VipsImageRef {
        try start()
        guard let p = pm_vips_open_buffer(photo.bytes.baseAddress, photo.count) else { throw error("open") }
        return VipsImageRef(p, source: photo)
    }

    /// A JPEG decoded by libjpeg-turbo straight into memory at `eighths`/8 scale, with the
    /// header's metadata, through photomemo's Huffman decoding and 3/8-scale inverse DCTs
    /// (jpeg_huffman.h, jpeg_idct.h); nil for a JPEG it does not take (CMYK, ...): use `jpeg`.
    static func jpegDirect(_ photo: PhotoBytes, eighths: Int, header: VipsImageRef) throws -> VipsImageRef? {
        var out: UnsafeMutablePointer<VipsImage>?
        var message = [CChar](repeating: 0, count: 256)
        let rc = pm_jpeg_decode(photo.bytes.baseAddress, photo.count, Int32(clamping: eighths),
                                Int32(PM_JPEG_OWN_IDCT | PM_JPEG_OWN_HUFFMAN), nil, header.ptr, &out, &message, message.count)
        if rc == 1 { return nil }
        guard rc == 0, let out else {
            throw Failure(description: "JPEG load failed: \(text(message))")
        }
        return VipsImageRef(out, source: photo)
    }

    static func jpeg(_ photo: PhotoBytes, shrink: Int) throws -> VipsImageRef {
        var out: UnsafeMutablePointer<VipsImage>?
        guard pm_vips_jpegload_buffer(photo.bytes.baseAddress, photo.count, Int32(clamping: shrink), &out) == 0, let out else {
            throw error("JPEG load")
        }
        return VipsImageRef(out, source: photo)
    }
}

/// A realistic test photo written by libvips (smooth colour plus sensor-like noise, an EXIF
/// orientation): what the benchmark and tests generate their corpora with, without
/// importing the C module themselves.
public enum SyntheticPhoto {
    public static func write(to path: String, width: Int, height: Int, orientation: Int = 1, seed: Int, quality: Int = 92,
                             progressive: Bool = false) throws {
        try Vips.start()
        guard pm_vips_synthetic_photo(path, Int32(width), Int32(height), Int32(orientation), Int32(truncatingIfNeeded: seed),
                                      Int32(quality), progressive ? 1 : 0) == 0 else {
            throw Vips.error("generating \(path)")
        }
    }
}
