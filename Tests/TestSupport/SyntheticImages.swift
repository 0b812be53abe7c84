import Foundation

/// Minimal, structurally valid files built by hand (the probe reads headers only).
public enum Synthetic {
    public static func png(width: UInt32, height: UInt32, withEnd: Bool = true, withData: Bool = true) -> [UInt8] {
        var b: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        func chunk(_ type: String, _ data: [UInt8]) {
            b += be32(UInt32(data.count)) + Array(type.utf8) + data + [0, 0, 0, 0]
        }
        chunk("IHDR", be32(width) + be32(height) + [8, 2, 0, 0, 0])
        if withData { chunk("IDAT", [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]) }
        if withEnd { chunk("IEND", []) }
        return b
    }

    public static func webpVP8X(width: Int, height: Int) -> [UInt8] {
        var payload: [UInt8] = Array("WEBP".utf8) + Array("VP8X".utf8) + le32(10) + [0, 0, 0, 0]
        payload += le24(width - 1) + le24(height - 1)
        return Array("RIFF".utf8) + le32(payload.count) + payload
    }

    /// An ISO BMFF box: 32-bit size + type + payload (`size` overrides the real size).
    public static func box(_ type: String, _ payload: [UInt8], size: UInt32? = nil) -> [UInt8] {
        be32(size ?? UInt32(8 + payload.count)) + Array(type.utf8) + payload
    }

    /// A HEIC header: ftyp, then meta/iprp/ipco holding one ispe (full box) per size.
    public static func heic(sizes: [(UInt32, UInt32)], extra: [UInt8] = []) -> [UInt8] {
        let ispes = sizes.flatMap { box("ispe", [0, 0, 0, 0] + be32($0.0) + be32($0.1)) }
        let meta = box("meta", [0, 0, 0, 0] + box("iprp", box("ipco", ispes)))
        return box("ftyp", Array("heic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8)) + meta + extra
    }

    public static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    public static func le32(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24 & 0xFF)] }
    public static func le24(_ v: Int) -> [UInt8] { Array(le32(v).prefix(3)) }
}

/// Writes a PNG with Python's zlib (no image library): `mode` is "rgba", "grey16" or "grey",
/// or "damaged": grey with its deflate stream garbled (chunk CRCs right, so only decoding
/// finds it).
public func makePNG(_ path: String, mode: String, width: Int = 120, height: Int = 90) throws {
    let script = """
    import struct, sys, zlib
    path, mode, w, h = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    if mode == 'rgba':   depth, ctype, px = 8, 6, bytes([255, 0, 0, 0])            # red, fully transparent
    elif mode == 'grey16': depth, ctype, px = 16, 0, struct.pack('>H', 32768)      # mid grey, 16-bit
    else:                depth, ctype, px = 8, 0, bytes([200])
    raw = b''.join(b'\\x00' + px * w for _ in range(h))
    data = bytearray(zlib.compress(raw))
    if mode == 'damaged':
        for k in range(8, len(data) - 8, 5): data[k] ^= 0x5A
    open(path, 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, depth, ctype, 0, 0, 0))
                           + chunk(b'IDAT', bytes(data)) + chunk(b'IEND', b''))
    """
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3", "-c", script, path, mode, String(width), String(height)]
    try p.run()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path]) }
}
