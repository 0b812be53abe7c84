import StageKit

/// What the index needs from a photo's header: upright size, format, and the EXIF facts
/// (taken, make, model, orientation, GPS). libvips exposes EXIF tags as strings like
/// `"Canon (Canon, ASCII, 6 components, 6 bytes)"`: the value is the part before " (".
struct PhotoMetadata: Sendable, Equatable {
    var width: Int
    var height: Int
    var format: String
    var orientation: Int
    var taken: String?
    var make: String?
    var model: String?
    var gps: (latitude: Double, longitude: Double)?

    static func == (a: PhotoMetadata, b: PhotoMetadata) -> Bool {
        a.width == b.width && a.height == b.height && a.format == b.format && a.orientation == b.orientation
            && a.taken == b.taken && a.make == b.make && a.model == b.model
            && a.gps?.latitude == b.gps?.latitude && a.gps?.longitude == b.gps?.longitude
    }

    init(image: VipsImageRef, format: String, orientation: Int) {
        let swapped = (5...8).contains(orientation)
        width = swapped ? image.height : image.width
        height = swapped ? image.width : image.height
        self.format = format
        self.orientation = orientation
        make = Self.value(image.string("exif-ifd0-Make"))
        model = Self.value(image.string("exif-ifd0-Model"))
        if let t = Self.value(image.string("exif-ifd2-DateTimeOriginal")) ?? Self.value(image.string("exif-ifd0-DateTime")) {
            taken = Self.isoDate(t, offset: Self.value(image.string("exif-ifd2-OffsetTimeOriginal")))
        }
        if let lat = Self.degrees(image.string("exif-ifd3-GPSLatitude")), let lon = Self.degrees(image.string("exif-ifd3-GPSLongitude")) {
            let ns = Self.value(image.string("exif-ifd3-GPSLatitudeRef"))?.uppercased() == "S" ? -1.0 : 1.0
            let ew = Self.value(image.string("exif-ifd3-GPSLongitudeRef"))?.uppercased() == "W" ? -1.0 : 1.0
            gps = (lat * ns, lon * ew)
        }
    }

    /// The tag's value without libvips' "(...)" description; nil when empty.
    static func value(_ raw: String?) -> String? {
        guard let raw else { return nil }
        let v = (raw.range(of: " (").map { String(raw[..<$0.lowerBound]) } ?? raw).trimmingCharacters(in: .whitespaces)
        return v.isEmpty ? nil : v
    }

    /// "2008:05:30 15:56:01" → "2008-05-30T15:56:01" (+ the EXIF offset when there is one).
    static func isoDate(_ exif: String, offset: String?) -> String? {
        let parts = exif.split(whereSeparator: { $0 == ":" || $0 == " " })
        guard parts.count >= 6, parts.allSatisfy({ $0.allSatisfy(\.isNumber) }), parts[0] != "0000" else { return nil }
        let s = "\(parts[0])-\(parts[1])-\(parts[2])T\(parts[3]):\(parts[4]):\(parts[5])"
        if let offset, offset.count == 6, offset.first == "+" || offset.first == "-" { return s + offset }
        return s
    }

    /// "43/1 28/1 281400/10000 (...)" → 43.4745 degrees.
    static func degrees(_ raw: String?) -> Double? {
        guard let v = value(raw) else { return nil }
        let nums = v.split(separator: " ").compactMap { part -> Double? in
            let f = part.split(separator: "/")
            guard f.count == 2, let a = Double(f[0]), let b = Double(f[1]), b != 0 else { return Double(part) }
            return a / b
        }
        guard nums.count == 3 else { return nil }
        return nums[0] + nums[1] / 60 + nums[2] / 3600
    }

    /// For the job's result; GPS only when the definition keeps it.
    func json(keepGPS: Bool) -> JSONValue {
        var exif: [String: JSONValue] = ["orientation": .int(Int64(orientation))]
        exif["taken"] = taken.map(JSONValue.string) ?? .null
        exif["make"] = make.map(JSONValue.string) ?? .null
        exif["model"] = model.map(JSONValue.string) ?? .null
        if keepGPS, let gps { exif["gps"] = ["latitude": .double(gps.latitude), "longitude": .double(gps.longitude)] }
        return .object(exif)
    }
}
