import PhotomemoCore
import StageKit

/// `validate`: the photo is an image of an allowed format, within the byte and pixel
/// limits, structurally whole. Reads the photo once, through one descriptor, checks its
/// bytes against the hash intake recorded (`PhotoBytes`), then reads headers only (plus
/// one linear pass over a JPEG's data); decoding is compress's job. With `scan_data`
/// false a JPEG is read only up to its first scan, and its image data is left to the
/// decoder (compress fails on libjpeg's warnings), so it is read once, not twice.
/// Every problem is permanent: the photo goes to quarantine with the reason.
public struct ValidateStage: Stage {
    public static let name = "validate"
    public static let summary = "checks format (magic bytes), size limits and structure without decoding"
    public static let workload = StageWorkload.cpu
    public static let photoLocal = true
    public static let runsUnseen = true
    public static let readsMemo = false
    public static let options: [StageOption] = [
        StageOption("formats", .stringList, default: ["jpeg", "png", "heic", "webp", "avif"],
                    "formats accepted, by magic bytes (the extension is not trusted): jpeg, png, heic, webp, avif"),
        StageOption("max_bytes", .integer, default: 52_428_800, "largest file accepted, in bytes"),
        StageOption("max_pixels", .integer, default: 100_000_000,
                    "largest width x height accepted, as the header claims it (stops decompression bombs)"),
        StageOption("max_pixels_per_byte", .integer, default: 4_000,
                    "largest ratio of claimed pixels to file bytes for an image over 4 megapixels (a 4 KB file claiming 100 MP is a bomb; real photos are under 200, a 12 MP single-colour HEIC about 1,500)"),
        StageOption("scan_data", .bool, default: true,
                    "JPEG: also walk the image data (truncation, invalid or out-of-sequence markers), reading the whole file; false: a sealed JPEG's headers only, for a job whose compress stage decodes every photo and fails on damage itself (a job without compress is refused)"),
    ]

    /// What a JPEG's headers fit in, nearly always (EXIF is at most 64 KB; a large ICC
    /// profile or XMP may need the whole file, which is then read).
    static let headBytes = 256 << 10

    let formats: Set<ImageProbe.Format>
    let maxBytes: Int64
    public var maxPhotoBytes: Int64? { maxBytes }
    let maxPixels: Int64
    let maxPixelsPerByte: Int64
    let scanData: Bool

    /// Below this many pixels a decode costs little memory whatever the file's size (a
    /// single-colour PNG or WebP of a few megapixels is tiny), so no ratio is asked of it.
    static let ratioFloorPixels: Int64 = 4_000_000

    public init(options: StageOptions, environment: StageEnvironment) throws {
        var formats: Set<ImageProbe.Format> = []
        for name in options.strings("formats") ?? [] {
            guard let f = ImageProbe.Format(rawValue: name) else {
                throw PhotomemoError(.badDefinition,
                    "unknown format \"\(name)\"; valid formats: \(ImageProbe.Format.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            formats.insert(f)
        }
        guard !formats.isEmpty else { throw PhotomemoError(.badDefinition, "\"formats\" must name at least one format") }
        self.formats = formats
        maxBytes = options.int("max_bytes")!
        maxPixels = options.int("max_pixels")!
        maxPixelsPerByte = options.int("max_pixels_per_byte")!
        scanData = options["scan_data"]?.boolValue ?? true
        guard maxBytes > 0, maxPixels > 0, maxPixelsPerByte > 0 else { throw PhotomemoError(.badDefinition, "limits must be positive") }
    }

    /// Without the data scan, a sealed JPEG's image data is checked only by a stage that
    /// decodes it: a job with none would take a damaged photo as whole.
    public func check(alongside stages: [any Stage]) throws {
        guard !scanData, !stages.contains(where: \.decodesPhotos) else { return }
        throw PhotomemoError(.badDefinition,
            "\"scan_data\": false leaves a JPEG's image data to a stage that decodes it (compress), and this job has none; keep the scan (\"scan_data\": true, the default) in a job without compress")
    }

    public func run(_ job: JobContext) -> StageOutcome {
        guard job.photoPath != nil else { return .skip(reason: "no photo") }
        let photo: PhotoBytes, headers: ImageProbe?
        do {
            (photo, headers) = try read(job)
        } catch {
            return StageOutcome(catching: error)
        }
        let probe: ImageProbe
        do {
            probe = try headers ?? ImageProbe.probe(photo.bytes, scanData: scanData)
        } catch {
            return .fail(.badImage, "\(error)")
        }
        guard formats.contains(probe.format) else {
            return .fail(.badImage, "format \(probe.format.rawValue) is not accepted (formats: \(formats.map(\.rawValue).sorted().joined(separator: ", ")))")
        }
        guard let pixels = probe.pixels, pixels <= maxPixels else {
            let count = probe.pixels.map { "\($0)" } ?? "more than 2^63"
            return .fail(.badImage, "image claims \(probe.width)x\(probe.height) = \(count) pixels, over max_pixels (\(maxPixels)): a possible decompression bomb")
        }
        // Like a zip bomb's check: memory follows the pixels claimed, not the file's bytes.
        if pixels > Self.ratioFloorPixels, pixels / max(1, photo.fileSize) >= maxPixelsPerByte {
            return .fail(.badImage, "image claims \(probe.width)x\(probe.height) = \(pixels) pixels from \(photo.fileSize) bytes, \(pixels / max(1, photo.fileSize)) pixels a byte, over max_pixels_per_byte (\(maxPixelsPerByte)): a possible decompression bomb")
        }
        job.update { $0.change(.original) { f in
            (f.format, f.width, f.height, f.bytes) = (probe.format.rawValue, probe.width, probe.height, photo.fileSize)
        } }
        return .continue(result: [
            "format": .string(probe.format.rawValue), "width": .int(Int64(probe.width)),
            "height": .int(Int64(probe.height)), "bytes": .int(photo.fileSize),
        ])
    }

    /// The photo's bytes (hash-checked unless sealed) and nil; or, with `scan_data` off, a
    /// sealed JPEG's first bytes and the probe of its headers (an unsealed photo could be
    /// other bytes now than the ones compress will check and decode: it is read whole).
    /// The photo is opened once (`PhotoFile`); both reads are of that descriptor.
    func read(_ job: JobContext) throws -> (PhotoBytes, ImageProbe?) {
        let file = try PhotoFile(job, maxBytes: maxBytes)
        if !scanData, let head = try PhotoBytes.head(file, count: Self.headBytes, seal: job.photoSeal),
           ImageProbe.sniff(head.bytes) == .jpeg, let probe = try? ImageProbe.probe(head.bytes, scanData: false) {
            return (head, probe)
        }
        return (try PhotoBytes.read(file, sha256: job.photoSHA256, seal: job.photoSeal), nil)
    }
}
