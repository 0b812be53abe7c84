/// What a HEIF file's `meta` box says about its primary image, read from the bytes in
/// memory without decoding: the HEVC tiles (a `grid`) or the single `hvc1` item, their
/// decoder configuration, and the properties compress applies (size, rotation, mirror,
/// clean aperture, colour). Byte positions are into the same buffer.
///
///     ftyp · meta { hdlr pict · pitm · iinf · iloc · iref dimg · idat · iprp { ipco · ipma } }
///
/// A file this cannot describe (malformed, or a layout it does not read) is a `Problem`:
/// compress then decodes the photo with libvips instead (CompressStage.swift).
public struct HEIFFile: Sendable {
    public struct Problem: Error, CustomStringConvertible, Sendable {
        public let description: String
        init(_ d: String) { description = d }
    }

    /// A file past `Items`' bounds (items, extents, bytes): refused, not decoded by anyone.
    public struct Limit: Error, CustomStringConvertible, Sendable {
        public let description: String
        init(_ d: String) { description = d }
    }

    /// Throws `Limit` for a file that declares more than anyone should parse, or whose
    /// streams code larger pictures than it declares (`checkPictureSizes`): validate's
    /// check, and compress's, before libvips and libheif see the file. A layout this cannot
    /// read is no error here: libheif may still read it.
    public static func checkLimits(_ bytes: UnsafeRawBufferPointer) throws {
        let items: Items
        do { items = try Self.items(bytes) } catch is Problem { return }
        try items.checkPictureSizes()
    }

    /// Whether the primary image is AV1 (an `av01` item, or a grid of them): AVIF, not
    /// HEIC, whatever brand comes first in ftyp (a file may list both). When the items
    /// cannot be read, the major brand decides.
    public static func isAV1(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if let items = try? items(bytes), let primary = items.types[items.primary] {
            let coding = primary == "grid" ? items.references("dimg").first { $0.from == items.primary }?.to.first.flatMap { items.types[$0] } : primary
            if let coding { return coding == "av01" }
        }
        return bytes.count >= 12 && ["avif", "avis"].contains(String(decoding: bytes[8..<12], as: UTF8.self))
    }

    /// Transforms in the order the file lists them (HEIF applies them in that order).
    public enum Transform: Sendable, Equatable {
        case rotate(quarterTurnsAnticlockwise: Int)
        /// imir: axis 0 swaps top and bottom, axis 1 left and right, as libheif reads it
        /// (ISO/IEC 23008-12's wording, "a vertical axis", reads the other way round).
        case mirror(topToBottom: Bool)
    }

    /// The decoded image's size (the grid's output, or the item's `ispe`), before transforms.
    public let width: Int
    public let height: Int
    public let columns: Int
    public let rows: Int
    public let tileWidth: Int
    public let tileHeight: Int
    /// Each tile's extents (byte ranges, concatenated in order), row by row.
    public let tiles: [[Range<Int>]]
    public let hevc: HEVCConfig
    public let transforms: [Transform]
    public let cleanAperture: Bool
    public let colour: Colour
    /// An alpha plane (an `auxl` item whose `auxC` says alpha, or says nothing) belongs to
    /// the primary image. An iPhone's HDR gain map (`urn:com:apple:photo:2020:aux:hdrgainmap`)
    /// or a depth map is an `auxl` item too, and is no alpha: taken for one, most iPhone
    /// photos since 2020 went to libvips' heifload, at twice the CPU.
    public let hasAlpha: Bool
    static let alphaURNs: Set<String> = ["urn:mpeg:hevc:2015:auxid:1", "urn:mpeg:avc:2015:auxid:1", "urn:mpeg:mpegB:cicp:systems:auxiliary:alpha"]

    public static func parse(_ bytes: UnsafeRawBufferPointer) throws -> HEIFFile {
        try HEIFFile(items: items(bytes))
    }

    /// The item tables of the file's `meta` box.
    static func items(_ bytes: UnsafeRawBufferPointer) throws -> Items {
        var top = BoxReader(bytes)
        guard try top.box().type == "ftyp" else { throw Problem("the file does not start with an ftyp box") }
        while top.left > 0 {
            var (type, meta) = try top.box()
            guard type == "meta" else { continue }
            _ = try meta.versionFlags()
            return try Items(meta)
        }
        throw Problem("no meta box")
    }

    init(items: Items) throws {
        guard let primary = items.types[items.primary] else { throw Problem("primary item \(items.primary) is not in iinf") }
        let props = try items.properties(of: items.primary)
        hasAlpha = try items.references("auxl").contains { ref in
            guard ref.to.contains(items.primary) else { return false }
            guard let kind = try items.properties(of: ref.from).lazy.compactMap(\.auxiliary).first else { return true }
            return Self.alphaURNs.contains(kind)
        }
        transforms = props.compactMap(\.transform)
        cleanAperture = props.contains { if case .cleanAperture = $0 { return true } else { return false } }
        colour = Colour(props)
        let tileIDs: [Int]
        switch primary {
        case "grid":
            let grid = try items.grid(items.primary)
            (rows, columns, width, height, tileIDs) = (grid.rows, grid.columns, grid.width, grid.height, grid.tiles)
        case "hvc1":
            guard let (w, h) = props.lazy.compactMap(\.size).first else { throw Problem("image has no ispe") }
            (width, height, rows, columns) = (w, h, 1, 1)
            tileIDs = [items.primary]
        default:
            throw Problem("primary item is \"\(primary)\", not grid or hvc1")
        }
        // Every tile alike: one hvc1 configuration and one size, so one decoder serves all.
        var config: HEVCConfig?, size: (Int, Int)?
        var tiles: [[Range<Int>]] = []
        for id in tileIDs {
            guard items.types[id] == "hvc1" else { throw Problem("tile \(id) is not an hvc1 item") }
            let p = id == items.primary ? props : try items.properties(of: id)
            guard let c = p.lazy.compactMap(\.hevc).first, let s = p.lazy.compactMap(\.size).first else {
                throw Problem("tile \(id) has no hvcC or ispe")
            }
            guard config.map({ $0 == c }) ?? true, size.map({ $0 == s }) ?? true else { throw Problem("tiles differ in configuration or size") }
            (config, size) = (c, s)
            tiles.append(try items.data(of: id))
        }
        guard let config, let size, size.0 > 0, size.1 > 0, width > 0, height > 0 else { throw Problem("empty image or tile size") }
        // The tiles cover the image (the grid crops their right and bottom edges).
        guard size.0.multipliedReportingOverflow(by: columns).partialValue >= width, size.0 <= Int(Int32.max) / columns,
              size.1 <= Int(Int32.max) / rows, size.1 * rows >= height else {
            throw Problem("\(columns)x\(rows) tiles of \(size.0)x\(size.1) do not cover \(width)x\(height)")
        }
        (hevc, tileWidth, tileHeight, self.tiles) = (config, size.0, size.1, tiles)
    }
}
