import Foundation
import HEIF
import PhotomemoCore
import StageKit

/// `compress`: turns a photo into the renditions its job definition asks for, upright,
/// sRGB, alpha flattened on white, metadata stripped (GPS always unless kept), and
/// reports the header facts the index needs.
///
///     open header ─▶ pick JPEG shrink-on-load ─▶ decode once (shrunk) ─▶ resize to the
///     largest rendition ─▶ upright (Orientation) ─▶ sRGB / 8-bit / flatten ─▶ in memory ("base")
///     base ─▶ each rendition: resize (and centre-crop for fill) ─▶ encode ─▶ file
///
/// Renditions are written to `HOME/renditions/<h>/<sha256(job key)>.<name>.<ext>`, so a
/// re-run for the same job rewrites the same files (idempotent); the upload stage moves
/// them into the store. The 256 `<h>` folders stay: no folder is made per job.
public struct CompressStage: Stage {
    public static let name = "compress"
    public static let summary = "makes the renditions (resize, crop, rotate, sRGB, strip) with libvips and reads EXIF"
    public static let workload = StageWorkload.cpu
    public static let photoLocal = true
    public static let runsUnseen = true
    public static let readsMemo = false
    public static let options: [StageOption] = [
        StageOption("renditions", .any, default: [
            ["name": "display", "width": 860, "format": "jpeg", "quality": 90],
            ["name": "thumbnail", "fill": [200, 200], "format": "jpeg", "quality": 70],
        ], "list of {name, width | height | width+height (fit) | fill: [w, h], format: jpeg|webp, quality, enlarge}"),
        StageOption("strip_gps", .bool, default: true, "drop GPS from renditions and from the record's exif"),
        StageOption("keep_metadata", .bool, default: false, "keep EXIF/XMP (minus GPS unless strip_gps is false) in renditions"),
        StageOption("max_pixels", .integer, default: 100_000_000,
                    "largest width x height compress decodes or makes (the photo, each rendition, a fill's uncropped scale); over it the job fails"),
        StageOption("max_bytes", .integer, default: 52_428_800, "largest photo file read, in bytes (as validate's)"),
    ]

    static let loaders = ["jpegload_buffer": "jpeg", "pngload_buffer": "png", "webpload_buffer": "webp", "heifload_buffer": "heic"]

    let renditions: [Rendition]
    let stripGPS: Bool
    let keepMetadata: Bool
    let maxPixels: Int64
    let maxBytes: Int64
    public var maxPhotoBytes: Int64? { maxBytes }
    /// Every photo is decoded whole (`fail_on=warning`): validate may skip its data scan.
    public var decodesPhotos: Bool { true }
    let outputRoot: String
    /// HEIC through photomemo's own HEIF path (HEIFDecode.swift); false: libvips' heifload
    /// for every HEIC (photomemo-bench compares the two in one run).
    public var decodesHEIFDirectly = true
    /// The daemon's decode memory budget (`"memory_mb"`).
    let decodeMemory: DecodeMemory

    public init(options: StageOptions, environment: StageEnvironment) throws {
        guard let list = options["renditions"]?.arrayValue, !list.isEmpty else {
            throw PhotomemoError(.badDefinition, "\"renditions\" must be a non-empty list")
        }
        renditions = try list.enumerated().map { try Rendition(json: $1, index: $0) }
        guard Set(renditions.map(\.name)).count == renditions.count else {
            throw PhotomemoError(.badDefinition, "rendition names must be unique")
        }
        stripGPS = options["strip_gps"]?.boolValue ?? true
        keepMetadata = options["keep_metadata"]?.boolValue ?? false
        maxPixels = options.int("max_pixels") ?? 100_000_000
        maxBytes = options.int("max_bytes") ?? 52_428_800
        guard maxPixels > 0, maxBytes > 0 else { throw PhotomemoError(.badDefinition, "limits must be positive") }
        outputRoot = environment.home.appendingPathComponent("renditions").path
        decodeMemory = try DecodeMemory.shared(in: environment.resources)
        try Vips.start()
    }

    /// Compress runs in progress in this process (`make`'s `shareCores`).
    static let running = LockedValue(0)
    static let cores = sysconf(Int32(_SC_NPROCESSORS_ONLN))

    public func run(_ job: JobContext) -> StageOutcome {
        guard job.photoPath != nil else { return .skip(reason: "no photo") }
        Self.running.withLock { $0 += 1 }
        defer { Self.running.withLock { $0 -= 1 } }
        let made: (PhotoMetadata, [(Rendition, Data, Int, Int)])
        do {
            // Decoded from the bytes intake hashed, read once: never reopened by name.
            let photo = try PhotoBytes.read(PhotoFile(job, maxBytes: maxBytes), sha256: job.photoSHA256, seal: job.photoSeal)
            made = try make(photo, key: job.key, shareCores: true)
            job.progress(0.9, "encoded")
        } catch let wait as DecodeMemoryWait {
            // Not the photo's fault, nor a thread held: it waits (no attempt spent) and runs
            // once other decodes have given their memory back.
            return .unavailable(dependency: "decode memory", .dependency, wait.reason)
        } catch let f as Vips.Failure {
            return .fail(.badImage, "cannot decode the photo: \(f.description)")
        } catch {
            return StageOutcome(catching: error)
        }
        let (meta, outputs) = made
        let keyHash = SHA256.hex(Data(job.key.utf8))
        let folder = outputRoot + "/" + keyHash.prefix(2)
        var results: [String: JSONValue] = [:]
        var files: [WorkingSet.File] = []
        do {
            try DurableFile.makeFolders(folder)
            let named = outputs.map { (r, data, _, _) in (data: data, path: folder + "/" + keyHash + "." + r.name + "." + (r.format == .jpeg ? "jpg" : "webp")) }
            // Durable before the outcome is: upload finds them after a crash. All at once,
            // with one fsync of their folder (DurableFile.write(_:in:)).
            try DurableFile.write(named, in: folder)
            for ((r, data, w, h), file) in zip(outputs, named.map(\.path)) {
                let sha = SHA256.hex(data)
                results[r.name] = [
                    "path": .string(file), "bytes": .int(Int64(data.count)), "width": .int(Int64(w)), "height": .int(Int64(h)),
                    "format": .string(r.format.rawValue), "sha256": .string(sha),
                ]
                files.append(WorkingSet.File(role: .rendition(r.name), path: file, sha256: sha, bytes: Int64(data.count),
                                             width: w, height: h, format: r.format.rawValue))
            }
        } catch {
            return StageOutcome(catching: error, otherwise: { .retry(.of($0, or: .io), "cannot write renditions to \(folder): \($0)") })
        }
        let exif = meta.json(keepGPS: !stripGPS)
        job.update { set in
            set.change(.original) { f in (f.width, f.height, f.format) = (meta.width, meta.height, meta.format) }
            for f in files { set.put(f) }
            set.exif = exif
        }
        return .continue(result: [
            "original": ["width": .int(Int64(meta.width)), "height": .int(Int64(meta.height)), "format": .string(meta.format)],
            "exif": exif,
            "renditions": .object(results),
        ])
    }

    /// Decodes once and produces every rendition in memory; `jpegScale` overrides the JPEG
    /// decode scale (tests compare scales with it).
    /// `shareCores`: the renditions may be made at once when no other compress runs
    /// (`atOnce` decides instead when set: tests compare the two).
    func make(_ photo: PhotoBytes, key: String = "", jpegScale: JPEGScale? = nil, shareCores: Bool = false, atOnce: Bool? = nil) throws
        -> (PhotoMetadata, [(Rendition, Data, Int, Int)]) {
        let layout = try self.layout(photo, jpegScale: jpegScale)
        let (header, format, heif, turn, plan, scale) = (layout.header, layout.format, layout.heif, layout.turn, layout.plan, layout.scale)
        let (bw, bh) = plan.base, (storedW, storedH) = layout.stored
        // Reserved before any pixel is decoded, given back when the renditions are made; at
        // libvips' shrink, the larger decode, since which decoder takes the photo shows later.
        let need = heif.map { DecodeEstimate.heif($0.file, base: (bw, bh)) }
            ?? DecodeEstimate.bytes(width: header.width, height: header.height, bands: header.bands, wide: !header.isUchar,
                                    format: format, progressive: (header.int("jpeg-multiscan") ?? 0) != 0, shrink: scale.shrink, base: (bw, bh))
        switch decodeMemory.reserve(need, for: key) {
        case .reserved: break
        case .wait(let why): throw DecodeMemoryWait(reason: why)
        case .never(let why): throw PhotomemoError(.badImage, "image is \(header.width)x\(header.height): \(why)")
        }
        var held = need
        defer { decodeMemory.release(held) }
        var image = header
        if let heif {
            do {
                image = try heif.decoded(photo, width: storedW, height: storedH, like: header)
            } catch let failure as HEVCDecoder.Failure {
                // Damage libavcodec reports: libvips decides, as before, with its own
                // reservation (this one given back first, so the two are never both held).
                Log.debug("HEIF: \(failure.description); libvips decodes it")
                decodeMemory.release(held)
                held = 0
                var libvips = self
                libvips.decodesHEIFDirectly = false
                return try libvips.make(photo, key: key, jpegScale: jpegScale, shareCores: shareCores, atOnce: atOnce)
            }
        } else if format == "jpeg" {
            if let direct = try Vips.jpegDirect(photo, eighths: scale.eighths, header: header) {
                image = direct
            } else if scale.shrink > 1 {
                image = try Vips.jpeg(photo, shrink: scale.shrink)
            }
        }
        // The resampler takes 8-bit pixels: 16-bit and float images convert before it,
        // 8-bit ones after (on fewer pixels).
        let wide = !image.isUchar
        if wide { image = try Self.toSRGB8(image) }
        // Turned upright as the resampler writes (one pass fewer over a portrait's base).
        if image.width != storedW || image.height != storedH {
            image = try image.resampled(width: storedW, height: storedH, orientation: turn)
        } else if turn != 1 {
            image = try image.uprighted(orientation: turn)
        }
        if !wide { image = try Self.toSRGB8(image) }
        if image.hasAlpha { image = try image.flattenedOnWhite() }
        if !keepMetadata || stripGPS { Self.removeGPS(image) }
        let base = try image.inMemory()

        func render(_ step: RenditionPlan.Step) throws -> (Rendition, Data, Int, Int) {
            let r = step.rendition
            var out = base
            // For fill, scale to cover, then cut the centre.
            let (ow, oh) = step.output, (cw, ch) = step.cover
            if cw != base.width || ch != base.height { out = try out.resampled(width: cw, height: ch) }
            if out.width != ow || out.height != oh {
                // Within the pixel limit, so each fits in Int32; checked anyway, never trapped.
                guard let left = Int32(exactly: (out.width - ow) / 2), let top = Int32(exactly: (out.height - oh) / 2),
                      let w = Int32(exactly: ow), let h = Int32(exactly: oh) else {
                    throw Vips.Failure(description: "crop to \(ow)x\(oh) is out of range")
                }
                out = try out.cropped(left: left, top: top, width: w, height: h)
            }
            let data = try out.encode(r.format, quality: r.quality, strip: !keepMetadata)
            return (r, data, out.width, out.height)
        }
        // Each rendition reads the base only. A lone photo (no other compress running) makes
        // them at once, on the cores nothing else uses; with photos waiting, one at a time,
        // as the other slots keep the cores busy.
        let together = atOnce ?? (shareCores && plan.steps.count > 1 && Self.cores > 1 && Self.running.value <= 1)
        let outputs = together ? try Concurrently.map(plan.steps, stage: Self.name, render) : try plan.steps.map(render)
        return (layout.meta, outputs)
    }

    /// sRGB (through the embedded profile when there is one, PLATFORM.md), 8 bits per band.
    static func toSRGB8(_ input: VipsImageRef) throws -> VipsImageRef {
        var image = input
        if image.has("icc-profile-data") {
            image = try image.iccToSRGB()
        } else if image.interpretation != "srgb" {
            image = try image.inSRGB()
        }
        if !image.isUchar { image = try image.castToUchar() }
        return image
    }

    /// Drops the GPS IFD: libvips rebuilds the EXIF block from these fields on save.
    static func removeGPS(_ image: VipsImageRef) {
        for name in image.fieldNames where name.hasPrefix("exif-ifd3-") { image.remove(field: name) }
    }
}

/// The decode memory budget cannot hold this photo's decode now (`DecodeMemory.wait`).
struct DecodeMemoryWait: Error {
    let reason: String
}
