/// EXIF orientations 2...8 applied to 8-bit interleaved pixels in one pass: what
/// `vips_autorot` does, without a libvips pipeline and its worker threads for a copy.
///
/// Each orientation is a walk through the stored pixels: where the upright image's first
/// pixel comes from, and how far the source moves per step right and per step down. The
/// resampler writes its output upright with the walk the other way (`placement`), so a
/// resized photo is never turned in a pass of its own.
enum Orientation {
    /// The upright size of a `width` x `height` stored image: 5...8 swap the sides.
    static func uprightSize(width: Int, height: Int, orientation: Int) -> (Int, Int) {
        (5...8).contains(orientation) ? (height, width) : (width, height)
    }

    /// Where the upright image's first pixel comes from in a stored `w` x `h` image, and how
    /// far the source moves per step right and per step down, in pixels.
    static func walk(orientation: Int, width w: Int, height h: Int) -> (first: Int, dx: Int, dy: Int) {
        switch orientation {
        case 2: (w - 1, -1, w)                  // mirrored left to right
        case 3: (w * h - 1, -1, -w)             // rotated 180
        case 4: ((h - 1) * w, 1, -w)            // mirrored top to bottom
        case 5: (0, w, 1)                       // transposed
        case 6: ((h - 1) * w, -w, 1)            // rotated 90 clockwise to view
        case 7: (w * h - 1, -w, -1)             // transversed
        case 8: (w - 1, w, -1)                  // rotated 90 anticlockwise to view
        default: (0, 1, w)
        }
    }

    /// The other way: where stored pixel (0, 0) of a `w` x `h` image lands in the upright
    /// image, and how far per stored step right and down. Turning the upright image by the
    /// inverse orientation gives back the stored one, so this is that turn's walk.
    static func placement(orientation: Int, width w: Int, height h: Int) -> (first: Int, dx: Int, dy: Int) {
        let (uw, uh) = uprightSize(width: w, height: h, orientation: orientation)
        // 6 and 8 undo each other; every other orientation undoes itself.
        let inverse = orientation == 6 ? 8 : orientation == 8 ? 6 : orientation
        return walk(orientation: inverse, width: uw, height: uh)
    }

    /// Writes `src` (`width` x `height` as stored, `bands` bytes a pixel, rows packed)
    /// upright into `dst` (`uprightSize`, packed).
    static func upright(_ src: UnsafePointer<UInt8>, width w: Int, height h: Int, bands: Int, orientation: Int,
                        into dst: UnsafeMutablePointer<UInt8>) {
        let (first, dx, dy) = walk(orientation: orientation, width: w, height: h)
        let (outW, outH) = uprightSize(width: w, height: h, orientation: orientation)
        var out = dst
        for y in 0..<outH {
            var s = src + (first + y * dy) * bands
            let step = dx * bands
            switch bands {
            case 3:
                for _ in 0..<outW {
                    out[0] = s[0]; out[1] = s[1]; out[2] = s[2]
                    out += 3
                    s += step
                }
            default:
                for _ in 0..<outW {
                    for b in 0..<bands { out[b] = s[b] }
                    out += bands
                    s += step
                }
            }
        }
    }
}
