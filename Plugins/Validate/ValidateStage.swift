import PhotomemoCore

/// `validate`: the photo is an image of an allowed format, within the byte and pixel
/// limits, structurally whole. Reads the photo once, through one descriptor, checks its
/// bytes against the hash intake recorded (`PhotoBytes`), then reads headers only (plus
/// one linear pass over a JPEG's data); decoding is compress's job. Every problem is permanent: the photo goes to
/// quarantine with the reason.
public struct ValidateStage: Stage {
    public static let name = "validate"
    public static let summary = "checks format (magic bytes), size limits and structure without decoding"
    public static let workload = StageWorkload.cpu
    public static let options: [StageOption] = [
        StageOption("formats", .stringList, default: ["jpeg", "png", "heic", "webp"],
                    "formats accepted, by magic bytes (the extension is not trusted): jpeg, png, heic, webp"),
        StageOption("max_bytes", .integer, default: 52_428_800, "largest file accepted, in bytes"),
        StageOption("max_pixels", .integer, default: 100_000_000,
                    "largest width x height accepted, as the header claims it (stops decompression bombs)"),
    ]

    let formats: Set<ImageProbe.Format>
    let maxBytes: Int64
    public var maxPhotoBytes: Int64? { maxBytes }
    let maxPixels: Int64

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
        guard maxBytes > 0, maxPixels > 0 else { throw PhotomemoError(.badDefinition, "limits must be positive") }
    }

    public func run(_ job: JobContext) -> StageOutcome {
        guard let path = job.photoPath else { return .skip(reason: "no photo") }
        let photo: PhotoBytes
        do {
            photo = try PhotoBytes.read(path, sha256: job.photoSHA256, seal: job.photoSeal, maxBytes: maxBytes)
        } catch let e as PhotomemoError where e.code == .io {
            return .retry(reason: e.message)
        } catch let e as PhotomemoError {
            return .fail(reason: e.message)
        } catch {
            return .fail(reason: "\(error)")
        }
        let probe: ImageProbe
        do {
            probe = try ImageProbe.probe(photo.bytes)
        } catch {
            return .fail(reason: "\(error)")
        }
        guard formats.contains(probe.format) else {
            return .fail(reason: "format \(probe.format.rawValue) is not accepted (formats: \(formats.map(\.rawValue).sorted().joined(separator: ", ")))")
        }
        guard let pixels = probe.pixels, pixels <= maxPixels else {
            let count = probe.pixels.map { "\($0)" } ?? "more than 2^63"
            return .fail(reason: "image claims \(probe.width)x\(probe.height) = \(count) pixels, over max_pixels (\(maxPixels)): a possible decompression bomb")
        }
        return .continue(result: [
            "format": .string(probe.format.rawValue), "width": .int(Int64(probe.width)),
            "height": .int(Int64(probe.height)), "bytes": .int(Int64(photo.count)),
        ])
    }
}
