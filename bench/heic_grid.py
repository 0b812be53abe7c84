"""A bigger HEIC made of a real iPhone photo's own tiles, for `photomemo-bench --heic`'s
memory figure at 48 MP (no real 48 MP "HEIF Max" file is at hand, and libheif here cannot
write grids). The primary image of an iPhone HEIC is a grid of 512x512 HEVC tiles, each an
independent picture sharing one hvcC; this writes a new grid of COLS x ROWS of those very
bitstreams (tile (r, c) is the original's (r mod rows, c mod cols): the photo repeated)
shown WIDTH x HEIGHT, with the primary's colour, rotation and pixel properties. Nothing else
crosses over: no thumbnail, HDR gain map, Exif or XMP.
usage: python3 heic_grid.py IN.heic OUT.heic [COLS ROWS WIDTH HEIGHT]   (default 16 12 8064 6048)
"""
import struct
import sys


def boxes(buf, off, end):
    while off < end:
        size, typ = struct.unpack(">I4s", buf[off:off + 8])
        hdr = 8
        if size == 1:
            size, hdr = struct.unpack(">Q", buf[off + 8:off + 16])[0], 16
        if size == 0:
            size = end - off
        yield typ.decode("latin1"), off, hdr, size
        off += size


def box(typ, payload):
    return struct.pack(">I4s", 8 + len(payload), typ.encode()) + payload


def full(typ, version, flags, payload):
    return box(typ, struct.pack(">I", (version << 24) | flags) + payload)


class Reader:
    def __init__(self, buf, at):
        self.buf, self.at = buf, at

    def take(self, n):
        v = int.from_bytes(self.buf[self.at:self.at + n], "big") if n else 0
        self.at += n
        return v


def parse(src):
    meta = next((o, h, s) for t, o, h, s in boxes(src, 0, len(src)) if t == "meta")
    parts = {t: (o + h, o + s) for t, o, h, s in boxes(src, meta[0] + meta[1] + 4, meta[0] + meta[2])}
    primary = struct.unpack(">H", src[parts["pitm"][0] + 4:parts["pitm"][0] + 6])[0]
    tiles = None
    for t, o, h, _ in boxes(src, parts["iref"][0] + 4, parts["iref"][1]):
        origin, n = struct.unpack(">HH", src[o + h:o + h + 4])
        if t == "dimg" and origin == primary:
            tiles = list(struct.unpack(">%dH" % n, src[o + h + 4:o + h + 4 + 2 * n]))
    # iloc: item -> (construction method, [(offset, length)])
    r = Reader(src, parts["iloc"][0])
    version = r.take(1); r.take(3)
    sizes, sizes2 = r.take(1), r.take(1)
    offset_size, length_size, base_size = sizes >> 4, sizes & 15, sizes2 >> 4
    index_size = sizes2 & 15 if version in (1, 2) else 0
    located = {}
    for _ in range(r.take(2) if version < 2 else r.take(4)):
        item = r.take(2) if version < 2 else r.take(4)
        method = r.take(2) & 15 if version in (1, 2) else 0
        r.take(2)
        base = r.take(base_size)
        extents = []
        for _ in range(r.take(2)):
            r.take(index_size)
            extents.append((base + r.take(offset_size), r.take(length_size)))
        located[item] = (method, extents)
    method, extents = located[primary]
    assert method == 1, "the primary is not a grid in idat"
    grid = src[parts["idat"][0] + extents[0][0]:][:extents[0][1]]
    rows, cols = grid[2] + 1, grid[3] + 1
    assert tiles and len(tiles) == rows * cols, "the primary is not a grid of its dimg tiles"
    # ipco's properties and ipma's associations (item -> [(essential, property index)])
    iprp = parts["iprp"]
    ipco = next((o + h, o + s) for t, o, h, s in boxes(src, *iprp) if t == "ipco")
    properties = [src[o:o + s] for _, o, _, s in boxes(src, *ipco)]
    r = Reader(src, next(o + h for t, o, h, s in boxes(src, *iprp) if t == "ipma"))
    version, flags = r.take(1), r.take(3)
    associations = {}
    for _ in range(r.take(4)):
        item = r.take(2) if version < 1 else r.take(4)
        pairs = []
        for _ in range(r.take(1)):
            x = r.take(2) if flags & 1 else r.take(1)
            bits = 15 if flags & 1 else 7
            pairs.append((x >> bits, x & ((1 << bits) - 1)))
        associations[item] = pairs
    data = [src[located[t][1][0][0]:][:located[t][1][0][1]] for t in tiles]
    return rows, cols, data, properties, associations[tiles[0]], associations[primary]


def write(out, rows, cols, width, height, src_rows, src_cols, data, properties, tile_props, grid_props):
    used = sorted({i for _, i in tile_props + grid_props})
    index = {old: new + 1 for new, old in enumerate(used)}
    grid_ispe = full("ispe", 0, 0, struct.pack(">II", width, height))
    grid_only = {i for _, i in grid_props} - {i for _, i in tile_props}
    ipco = b"".join(grid_ispe if i in grid_only and properties[i - 1][4:8] == b"ispe" else properties[i - 1] for i in used)
    ids = list(range(1, rows * cols + 1))
    grid_id = len(ids) + 1
    tiles = [data[(r % src_rows) * src_cols + (c % src_cols)] for r in range(rows) for c in range(cols)]
    grid = struct.pack(">BBBBHH", 0, 0, rows - 1, cols - 1, width, height)
    ipma = b"".join(struct.pack(">HB", item, len(props)) + bytes((e << 7) | index[i] for e, i in props)
                    for item, props in [(i, tile_props) for i in ids] + [(grid_id, grid_props)])
    iinf = full("iinf", 0, 0, struct.pack(">H", grid_id)
                + b"".join(full("infe", 2, 1, struct.pack(">HH", i, 0) + b"hvc1\0") for i in ids)
                + full("infe", 2, 0, struct.pack(">HH", grid_id, 0) + b"grid\0"))
    iref = full("iref", 0, 0, box("dimg", struct.pack(">HH", grid_id, len(ids)) + struct.pack(">%dH" % len(ids), *ids)))

    def meta(mdat_data):
        entries, at = b"", mdat_data
        for i, t in zip(ids, tiles):
            entries += struct.pack(">HHHHII", i, 0, 0, 1, at, len(t))
            at += len(t)
        entries += struct.pack(">HHHHII", grid_id, 1, 0, 1, 0, len(grid))
        iloc = full("iloc", 1, 0, bytes([0x44, 0x00]) + struct.pack(">H", grid_id) + entries)
        hdlr = full("hdlr", 0, 0, b"\0" * 4 + b"pict" + b"\0" * 13)
        pitm = full("pitm", 0, 0, struct.pack(">H", grid_id))
        iprp = box("iprp", box("ipco", ipco) + full("ipma", 0, 0, struct.pack(">I", grid_id) + ipma))
        return full("meta", 0, 0, hdlr + pitm + iloc + iinf + iref + iprp + box("idat", grid))

    ftyp = box("ftyp", b"heic" + b"\0" * 4 + b"mif1MiHEmiafMiHBheic")
    mdat_data = len(ftyp) + len(meta(0)) + 8  # the same size whatever the offsets (4 bytes each)
    with open(out, "wb") as f:
        f.write(ftyp + meta(mdat_data) + box("mdat", b"".join(tiles)))


if __name__ == "__main__":
    source, out = sys.argv[1], sys.argv[2]
    cols, rows, width, height = (int(x) for x in sys.argv[3:7]) if len(sys.argv) > 6 else (16, 12, 8064, 6048)
    src_rows, src_cols, data, properties, tile_props, grid_props = parse(open(source, "rb").read())
    write(out, rows, cols, width, height, src_rows, src_cols, data, properties, tile_props, grid_props)
    print("%s: %dx%d, %d tiles of %s's %d (%dx%d)" % (out, width, height, rows * cols, source, len(data), src_cols, src_rows))
