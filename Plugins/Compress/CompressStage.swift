import CVips
import Foundation
import PhotomemoCore

/// `compress`: turns a photo into the renditions its job definition asks for, upright,
/// sRGB, alpha flattened on white, metadata stripped (GPS always unless kept), and
/// reports the header facts the index needs.
///
///     open header ─▶ pick JPEG shrink-on-load ─▶ decode once (shrunk) ─▶ resize to the
///     largest rendition ─▶ rotate ─▶ sRGB / 8-bit / flatten ─▶ in memory ("base")
///     base ─▶ each rendition: resize (and centre-crop for fill) ─▶ encode ─▶ file
///
/// Renditions are written to `HOME/renditions/<h>/<sha256(job key)>/<name>.<ext>`, so a
/// re-run for the same job rewrites the same files (idempotent); the upload stage moves
/// them into the store.
public struct CompressStage: Stage {
    public static let name = "compress"
    public static let summary = "makes the renditions (resize, crop, rotate, sRGB, strip) with libvips and reads EXIF"
    public static let workload = StageWorkload.cpu
    public static let options: [StageOption] = [
        StageOption("renditions", .any, default: [
            ["name": "display", "width": 860, "format": "jpeg", "quality": 90],
            ["name": "thumbnail", "fill": [200, 200], "format": "jpeg", "quality": 70],
        ], "list of {name, width | height | width+height (fit) | fill: [w, h], format: jpeg|webp, quality, enlarge}"),
        StageOption("strip_gps", .bool, default: true, "drop GPS from renditions and from the record's exif"),
        StageOption("keep_metadata", .bool, default: false, "keep EXIF/XMP (minus GPS unless strip_gps is false) in renditions"),
    ]

    static let loaders = ["jpegload": "jpeg", "pngload": "png", "webpload": "webp", "heifload": "heic"]

    let renditions: [Rendition]
    let stripGPS: Bool
    let keepMetadata: Bool
    let outputRoot: String

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
        outputRoot = environment.home.appendingPathComponent("renditions").path
        try Vips.start()
    }

    public func run(_ job: JobContext) -> StageOutcome {
        guard let path = job.photoPath else { return .skip(reason: "no photo") }
        let made: (PhotoMetadata, [(Rendition, Data, Int, Int)])
        do {
            made = try make(path)
            job.progress(0.9, "encoded")
        } catch let f as Vips.Failure {
            return .fail(reason: "cannot decode the photo: \(f.description)")
        } catch {
            return .fail(reason: "\(error)")
        }
        let (meta, outputs) = made
        let keyHash = SHA256.hex(Data(job.key.utf8))
        let folder = outputRoot + "/" + keyHash.prefix(2) + "/" + keyHash
        var results: [String: JSONValue] = [:]
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for (r, data, w, h) in outputs {
                let file = folder + "/" + r.name + "." + (r.format == .jpeg ? "jpg" : "webp")
                try DurableFile.write(data, to: file)
                results[r.name] = [
                    "path": .string(file), "bytes": .int(Int64(data.count)), "width": .int(Int64(w)), "height": .int(Int64(h)),
                    "format": .string(r.format.rawValue), "sha256": .string(SHA256.hex(data)),
                ]
            }
        } catch {
            return .retry(reason: "cannot write renditions to \(folder): \(error)")
        }
        return .continue(result: [
            "original": ["width": .int(Int64(meta.width)), "height": .int(Int64(meta.height)), "format": .string(meta.format)],
            "exif": meta.json(keepGPS: !stripGPS),
            "renditions": .object(results),
        ])
    }

    /// Decodes once and produces every rendition in memory.
    func make(_ path: String) throws -> (PhotoMetadata, [(Rendition, Data, Int, Int)]) {
        guard let loader = Vips.loader(for: path) else { throw Vips.Failure(description: "not an image libvips can read") }
        guard let format = Self.loaders[loader] else {
            throw Vips.Failure(description: "format \(loader.replacingOccurrences(of: "load", with: "")) is not accepted")
        }
        let header = try Vips.open(path)
        // libheif applies HEIF rotations itself; EXIF orientation matters for the rest.
        let orientation = format == "heic" ? 1 : header.orientation
        let meta = PhotoMetadata(image: header, format: format, orientation: orientation)
        let swapped = (5...8).contains(orientation)

        // The base: the largest rendition's scale (never enlarged; renditions enlarge from it).
        let scales: [Double] = renditions.map { $0.scale(width: meta.width, height: meta.height) }
        let baseScale: Double = min(1, scales.max()!)
        let bw: Int = max(1, Int((Double(meta.width) * baseScale).rounded()))
        let bh: Int = max(1, Int((Double(meta.height) * baseScale).rounded()))
        let (storedW, storedH) = swapped ? (bh, bw) : (bw, bh)

        var image = header
        if format == "jpeg" {
            // Shrink-on-load: the largest DCT scale that still covers the base.
            let shrink: Int = [8, 4, 2].first { (s: Int) -> Bool in
                (header.width + s - 1) / s >= storedW && (header.height + s - 1) / s >= storedH
            } ?? 1
            if shrink > 1 { image = try Vips.jpeg(path, shrink: shrink) }
        }
        // The resampler takes 8-bit pixels: 16-bit and float images convert before it,
        // 8-bit ones after (on fewer pixels).
        let wide = !image.isUchar
        if wide { image = try Self.toSRGB8(image) }
        if image.width != storedW || image.height != storedH {
            image = try image.resampled(width: storedW, height: storedH)
        }
        if orientation != 1 {
            // Rotation reads out of order: it needs the (already small) image in memory.
            image = try image.inMemory().then("rotate") { pm_vips_autorot($0, $1) }
        }
        if !wide { image = try Self.toSRGB8(image) }
        if image.hasAlpha { image = try image.then("flatten") { pm_vips_flatten_white($0, $1) } }
        if !keepMetadata || stripGPS { Self.removeGPS(image) }
        let base = try image.inMemory()

        var outputs: [(Rendition, Data, Int, Int)] = []
        for r in renditions {
            var out = base
            let s = r.scale(width: meta.width, height: meta.height)
            let (ow, oh) = r.outputSize(width: meta.width, height: meta.height)
            // For fill, scale to cover, then cut the centre.
            var (cw, ch) = (ow, oh)
            if case .fill = r.size {
                cw = max(ow, Int((Double(meta.width) * s).rounded()))
                ch = max(oh, Int((Double(meta.height) * s).rounded()))
            }
            if cw != base.width || ch != base.height { out = try out.resampled(width: cw, height: ch) }
            if out.width != ow || out.height != oh {
                let left = (out.width - ow) / 2, top = (out.height - oh) / 2
                out = try out.then("crop") { pm_vips_extract($0, $1, Int32(left), Int32(top), Int32(ow), Int32(oh)) }
            }
            let data = try out.encode(r.format, quality: r.quality, strip: !keepMetadata)
            outputs.append((r, data, out.width, out.height))
        }
        return (meta, outputs)
    }

    /// sRGB (through the embedded profile when there is one, PLATFORM.md), 8 bits per band.
    static func toSRGB8(_ input: VipsImageRef) throws -> VipsImageRef {
        var image = input
        if image.has("icc-profile-data") {
            image = try image.then("colour transform") { pm_vips_icc_to_srgb($0, $1) }
        } else if image.interpretation != "srgb" {
            image = try image.then("colour conversion") { pm_vips_colourspace_srgb($0, $1) }
        }
        if !image.isUchar { image = try image.then("8-bit conversion") { pm_vips_cast_uchar($0, $1) } }
        return image
    }

    /// Drops the GPS IFD: libvips rebuilds the EXIF block from these fields on save.
    static func removeGPS(_ image: VipsImageRef) {
        guard let fields = vips_image_get_fields(image.ptr) else { return }
        defer { g_strfreev(fields) }
        var i = 0
        var names: [String] = []
        while let f = fields[i] {
            let name = String(cString: f)
            if name.hasPrefix("exif-ifd3-") { names.append(name) }
            i += 1
        }
        for n in names { vips_image_remove(image.ptr, n) }
    }
}
