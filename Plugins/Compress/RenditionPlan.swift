import StageKit

/// Every size compress will make for one photo, computed and checked against the pixel
/// limit before a pixel is decoded: the decoded source, the base (the largest rendition,
/// never enlarged), and each rendition's output and, for fill, the image it is cut from.
/// A photo within validate's limits can still ask for a huge rendition (1 x 3,000,000 at
/// width 860 is 860 x 2,580,000,000): that is the photo's problem, a permanent failure.
struct RenditionPlan {
    struct Step {
        let rendition: Rendition
        let output: (width: Int, height: Int)
        let cover: (width: Int, height: Int)
    }

    /// Upright size of the base every rendition is scaled from.
    let base: (width: Int, height: Int)
    let steps: [Step]

    /// `width` x `height` is the upright source.
    init(_ renditions: [Rendition], width: Int, height: Int, maxPixels: Int64) throws {
        try Self.check("the photo", width, height, maxPixels)
        let baseScale = min(1, renditions.map { $0.scale(width: width, height: height) }.max()!)
        base = (Rendition.side(Double(width) * baseScale), Rendition.side(Double(height) * baseScale))
        steps = try renditions.map { r in
            let output = r.outputSize(width: width, height: height), cover = r.coverSize(width: width, height: height)
            try Self.check("rendition \"\(r.name)\"", output.0, output.1, maxPixels)
            if cover != output { try Self.check("rendition \"\(r.name)\" (before its centre crop)", cover.0, cover.1, maxPixels) }
            return Step(rendition: r, output: output, cover: cover)
        }
    }

    static func check(_ what: String, _ w: Int, _ h: Int, _ maxPixels: Int64) throws {
        let (pixels, overflow) = Int64(w).multipliedReportingOverflow(by: Int64(h))
        guard overflow || pixels > maxPixels else { return }
        let count = overflow ? "more than 2^63" : "\(pixels)"
        throw PhotomemoError(.badImage, "\(what) would be \(w)x\(h) = \(count) pixels, over compress max_pixels (\(maxPixels))")
    }
}
