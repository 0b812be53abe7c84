import StageKit

/// One output image of the compress stage, as a job definition declares it:
/// `{"name": "display", "width": 860, "format": "jpeg", "quality": 90}` (exactly that wide,
/// up or down; `"enlarge": false` only shrinks), `"height": N`, a box `"width"+"height"`
/// (fit inside), or `"fill": [W, H]` (scale to cover, centre-crop).
struct Rendition: Sendable, Equatable {
    enum Format: String, Sendable, CaseIterable { case jpeg, webp }
    enum Size: Sendable, Equatable {
        case width(Int)
        case height(Int)
        case fit(Int, Int)
        case fill(Int, Int)
    }

    let name: String
    let size: Size
    let format: Format
    let quality: Int
    let enlarge: Bool

    static let keys: Set<String> = ["name", "width", "height", "fill", "format", "quality", "enlarge"]

    init(name: String, size: Size, format: Format = .jpeg, quality: Int = 85, enlarge: Bool = true) {
        self.name = name
        self.size = size
        self.format = format
        self.quality = quality
        self.enlarge = enlarge
    }

    init(json: JSONValue, index: Int) throws {
        let place = "renditions[\(index)]"
        guard case .object(let o) = json else { throw PhotomemoError(.badDefinition, "\(place) must be an object") }
        if let bad = o.keys.sorted().first(where: { !Self.keys.contains($0) }) {
            throw PhotomemoError(.badDefinition, "\(place): unknown key \"\(bad)\"; valid keys: \(Self.keys.sorted().joined(separator: ", "))")
        }
        guard let name = o["name"]?.stringValue, MemoJob.isIdentifier(name) else {
            throw PhotomemoError(.badDefinition, "\(place): \"name\" must be a name of letters, digits and _")
        }
        guard name != "original" else { throw PhotomemoError(.badDefinition, "\(place): \"original\" is the name of the uploaded original") }
        func dim(_ k: String) throws -> Int? {
            guard let v = o[k] else { return nil }
            guard let n = v.intValue, n >= 1, n <= 16384 else {
                throw PhotomemoError(.badDefinition, "\(place): \"\(k)\" must be an integer from 1 to 16384")
            }
            return Int(n)
        }
        let w = try dim("width"), h = try dim("height")
        if let fill = o["fill"] {
            guard w == nil, h == nil, let a = fill.arrayValue, a.count == 2, let fw = a[0].intValue, let fh = a[1].intValue,
                  (1...16384).contains(fw), (1...16384).contains(fh) else {
                throw PhotomemoError(.badDefinition, "\(place): \"fill\" must be [width, height] (and alone, without width/height)")
            }
            size = .fill(Int(fw), Int(fh))
        } else if let w, let h {
            size = .fit(w, h)
        } else if let w {
            size = .width(w)
        } else if let h {
            size = .height(h)
        } else {
            throw PhotomemoError(.badDefinition, "\(place): give \"width\", \"height\", both, or \"fill\"")
        }
        let f = o["format"]?.stringValue ?? "jpeg"
        guard let format = Format(rawValue: f) else {
            throw PhotomemoError(.badDefinition, "\(place): unknown format \"\(f)\"; formats: jpeg, webp")
        }
        self.format = format
        let q = o["quality"]?.intValue ?? 85
        guard (1...100).contains(q) else { throw PhotomemoError(.badDefinition, "\(place): \"quality\" must be from 1 to 100") }
        quality = Int(q)
        enlarge = o["enlarge"]?.boolValue ?? true
        self.name = name
    }

    /// Scale from an upright `w`x`h` image to this rendition (before any crop).
    func scale(width w: Int, height h: Int) -> Double {
        let s: Double = switch size {
        case .width(let tw): Double(tw) / Double(w)
        case .height(let th): Double(th) / Double(h)
        case .fit(let tw, let th): min(Double(tw) / Double(w), Double(th) / Double(h))
        case .fill(let tw, let th): max(Double(tw) / Double(w), Double(th) / Double(h))
        }
        return enlarge ? s : min(s, 1)
    }

    /// Output size from an upright `w`x`h` source: exact on the side the rendition names.
    func outputSize(width w: Int, height h: Int) -> (Int, Int) {
        let s = scale(width: w, height: h)
        switch size {
        case .width(let tw) where enlarge || tw <= w: return (tw, Self.side(Double(h) * s))
        case .height(let th) where enlarge || th <= h: return (Self.side(Double(w) * s), th)
        case .fill(let tw, let th): return (min(tw, Self.side(Double(w) * s)), min(th, Self.side(Double(h) * s)))
        default: return (Self.side(Double(w) * s), Self.side(Double(h) * s))
        }
    }

    /// For fill, the scaled image the centre is cut from (covering the box); else the output.
    func coverSize(width w: Int, height h: Int) -> (Int, Int) {
        let (ow, oh) = outputSize(width: w, height: h)
        guard case .fill = size else { return (ow, oh) }
        let s = scale(width: w, height: h)
        return (max(ow, Self.side(Double(w) * s)), max(oh, Self.side(Double(h) * s)))
    }

    /// A scaled side: rounded, at least 1, and saturating (at 2^50) instead of trapping in
    /// `Int(_:)`: a 1 x 3,000,000 photo at width 860 asks for a height of 2.58e9, which
    /// the pixel limit then refuses by name.
    static func side(_ d: Double) -> Int {
        guard !d.isNaN else { return 1 << 50 }
        return Int(Swift.min(Swift.max(d.rounded(), 1), Double(1 << 50)))
    }
}
