import CVips
import PhotomemoCore

extension HEIFDecode {
    /// This path for `photo`, or nil when libvips must decode it: a file HEIFDecode does not
    /// handle, or one whose size or bands libvips' header (what the record and the renditions
    /// are planned from) sees differently.
    static func handling(_ photo: PhotoBytes, header: VipsImageRef) -> HEIFDecode? {
        guard let d = HEIFDecode(photo.bytes), header.bands == 3, header.isUchar, !header.hasAlpha,
              Orientation.uprightSize(width: d.file.width, height: d.file.height, orientation: d.orientation) == (header.width, header.height)
        else { return nil }
        return d
    }

    /// The photo at `w` x `h` as stored (before `orientation`), an 8-bit RGB image with the
    /// header's metadata (its ICC profile, EXIF) for the stage's next steps.
    func decoded(_ photo: PhotoBytes, width w: Int, height h: Int, like header: VipsImageRef) throws -> VipsImageRef {
        guard let w32 = Int32(exactly: w), let h32 = Int32(exactly: h), let out = pm_vips_new_memory_like(header.ptr, w32, h32) else {
            throw Vips.error("HEIF decode to \(w)x\(h)")
        }
        let image = VipsImageRef(out)
        try decode(photo.bytes, width: w, height: h, into: pm_vips_pixels(out))
        return image
    }
}
