import HEIF
import PhotomemoCore
import StageKit

extension CompressStage {
    /// What `make` will decode for one photo, read from its header before any pixel is:
    /// the format, which decoder, the turn to upright, every size, the JPEG DCT scale.
    struct Layout {
        let header: VipsImageRef
        let format: String
        let meta: PhotoMetadata
        /// The own HEIF path's handling, nil when libvips decodes the photo.
        let heif: HEIFDecode?
        /// The EXIF orientation (1...8) the base is turned by as it is resampled.
        let turn: Int
        let plan: RenditionPlan
        /// The base as stored (before `turn`): what a decode must cover.
        let stored: (width: Int, height: Int)
        let scale: JPEGScale
    }

    /// `jpegScale`: as `make`'s.
    func layout(_ photo: PhotoBytes, jpegScale: JPEGScale? = nil) throws -> Layout {
        guard let loader = Vips.loader(for: photo) else { throw Vips.Failure(description: "not an image libvips can read") }
        guard var format = Self.loaders[loader] else {
            throw Vips.Failure(description: "format \(loader.replacingOccurrences(of: "load_buffer", with: "")) is not accepted")
        }
        // libheif reads AV1 in HEIF too (with dav1d): the primary image's coding tells the two apart.
        if format == "heic", HEIFFile.isAV1(photo.bytes) { format = "avif" }
        // Refused before libheif parses it, as validate refuses it (a definition may lack validate).
        if format == "heic" || format == "avif" {
            do { try HEIFFile.checkLimits(photo.bytes) } catch let e as HEIFFile.Limit { throw Vips.Failure(description: "HEIF is refused: \(e.description)") }
        }
        let header = try Vips.open(photo)
        if format == "jpeg", (header.int("jpeg-multiscan") ?? 0) != 0, JPEGScans.count(photo.bytes) > JPEGScans.limit {
            throw PhotomemoError(.badImage, "JPEG has more than \(JPEGScans.limit) scans (encoders write about 10): refused before decoding")
        }
        // libheif applies HEIF rotations itself; EXIF orientation matters for the rest.
        let orientation = format == "heic" || format == "avif" ? 1 : header.orientation
        let meta = PhotoMetadata(image: header, format: format, orientation: orientation)
        // HEIC: photomemo's own decode at the tile floor when it handles the file, which then
        // applies the HEIF rotation and mirror itself (after the resize); libvips' otherwise.
        let heif = format == "heic" && decodesHEIFDirectly ? HEIFDecode.handling(photo, header: header) : nil
        let turn = heif?.orientation ?? orientation
        // Every size, checked before decoding. The base: the largest rendition's scale
        // (never enlarged; renditions enlarge from it).
        let plan = try RenditionPlan(renditions, width: meta.width, height: meta.height, maxPixels: maxPixels)
        let (bw, bh) = plan.base
        let stored = (5...8).contains(turn) ? (bh, bw) : (bw, bh)
        // Shrink-on-load (JPEG): the smallest DCT scale that still covers the base.
        let scale = format != "jpeg" ? .full : jpegScale ?? JPEGScale(width: header.width, height: header.height, covering: stored)
        return Layout(header: header, format: format, meta: meta, heif: heif, turn: turn, plan: plan, stored: stored, scale: scale)
    }

    /// The DCT scale in eighths (1, 2, 3, 4 or 8) this stage decodes a JPEG at; nil for any
    /// other format. For `photomemo-bench --e2e`'s floor at each photo's own scale.
    public func jpegDecodeEighths(_ photo: PhotoBytes) throws -> Int? {
        let layout = try layout(photo)
        return layout.format == "jpeg" ? layout.scale.eighths : nil
    }
}
