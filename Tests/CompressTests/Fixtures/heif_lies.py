"""HEICs whose tile sizes lie, made from a real photo's first tile (HEIFPictureSizeTests):
a 16x16 grid shown 1024x1024 whose 256 references are all one hvc1 item, its ispe saying
64x64 while its stream codes the photo's tile (512x512). MODE says where the truth hides:
  twosps  hvcC holds a copy of the SPS rewritten to 64x64 first, the real one after it
  inband  hvcC holds only the rewritten SPS; the real SPS and PPS lead the item's data
  noispe  the item declares no ispe at all
  honest  no lie: ispe 512x512, a 2x2 grid shown 1024x1024 (the control)
  overlay no lie either: an iovl overlay of 64x64 drawing the honest 512x512 tile 4 times
  vastoverlay  that overlay, its tile's ispe saying 4294967295x4294967295 (2^64 pixels)
usage: python3 heif_lies.py SOURCE.heic OUT.heic MODE"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../bench"))
from heic_grid import box, full, parse  # noqa: E402


def unescape(b):
    out, zeros = bytearray(), 0
    for x in b:
        if zeros >= 2 and x == 3:
            zeros = 0
            continue
        out.append(x)
        zeros = zeros + 1 if x == 0 else 0
    return bytes(out)


def escape(b):
    out, zeros = bytearray(), 0
    for x in b:
        if zeros >= 2 and x <= 3:
            out.append(3)
            zeros = 0
        out.append(x)
        zeros = zeros + 1 if x == 0 else 0
    return bytes(out)


def resized_sps(nal, w, h):
    """The SPS with pic_width/height_in_luma_samples replaced (ue(v) values re-coded)."""
    bits = "".join(format(x, "08b") for x in unescape(nal[2:]))
    at = 4
    sub = int(bits[at:at + 3], 2)
    at += 4 + 96
    present = [(bits[at + 2 * i] == "1", bits[at + 2 * i + 1] == "1") for i in range(sub)]
    at += 2 * sub + (2 * (8 - sub) if sub else 0)
    for p, l in present:
        at += (88 if p else 0) + (8 if l else 0)

    def ue(at):
        z = 0
        while bits[at + z] == "0":
            z += 1
        return int(bits[at + z:at + 2 * z + 1], 2) - 1, at + 2 * z + 1

    def code(v):
        s = format(v + 1, "b")
        return "0" * (len(s) - 1) + s
    _, at = ue(at)               # sps id
    chroma, at = ue(at)
    if chroma == 3:
        at += 1
    start = at
    _, at = ue(at)
    _, at = ue(at)
    out = (bits[:start] + code(w) + code(h) + bits[at:]).rstrip("0")  # the stop bit is the last 1
    out += "0" * (-len(out) % 8)
    return nal[:2] + escape(bytes(int(out[i:i + 8], 2) for i in range(0, len(out), 8)))


def hvcc_with(hvcc, sps_list):
    """hvcC (whole box) with its SPS array replaced by `sps_list` (None: kept), and its arrays."""
    body = hvcc[8:]
    head, count, at, arrays = body[:22], body[22], 23, []
    for _ in range(count):
        kind, n = body[at], struct.unpack(">H", body[at + 1:at + 3])[0]
        at += 3
        nals = []
        for _ in range(n):
            length = struct.unpack(">H", body[at:at + 2])[0]
            nals.append(body[at + 2:at + 2 + length])
            at += 2 + length
        arrays.append((kind, sps_list if kind & 0x3F == 33 and sps_list is not None else nals))
    return box("hvcC", head + bytes([len(arrays)]) + b"".join(
        bytes([k]) + struct.pack(">H", len(ns)) + b"".join(struct.pack(">H", len(x)) + x for x in ns) for k, ns in arrays)), arrays


def main(source, out, mode):
    _, _, tiles, properties, tile_props, _ = parse(open(source, "rb").read())
    hvcc = next(properties[i - 1] for _, i in tile_props if properties[i - 1][4:8] == b"hvcC")
    _, arrays = hvcc_with(hvcc, None)
    real = next(ns for k, ns in arrays if k & 0x3F == 33)[0]
    pps = next(ns for k, ns in arrays if k & 0x3F == 34)[0]
    fake = resized_sps(real, 64, 64)
    data, side, n = tiles[0], 64, 16
    if mode == "twosps":
        hvcc, _ = hvcc_with(hvcc, [fake, real])
    elif mode == "inband":
        hvcc, _ = hvcc_with(hvcc, [fake])
        data = struct.pack(">I", len(real)) + real + struct.pack(">I", len(pps)) + pps + data
    elif mode in ("honest", "overlay"):
        side, n = 512, 2
    elif mode == "vastoverlay":
        side, n, mode = 0xFFFFFFFF, 2, "overlay"
    properties = [hvcc] + ([] if mode == "noispe" else [full("ispe", 0, 0, struct.pack(">II", side, side))])
    canvas = 64 if mode == "overlay" else 1024
    properties.append(full("ispe", 0, 0, struct.pack(">II", canvas, canvas)))
    tile_assoc = bytes([0x81]) + (b"" if mode == "noispe" else bytes([2]))
    ipma = struct.pack(">HB", 1, len(tile_assoc)) + tile_assoc + struct.pack(">HB", 2, 1) + bytes([len(properties)])
    iinf = full("iinf", 0, 0, struct.pack(">H", 2) + full("infe", 2, 1, struct.pack(">HH", 1, 0) + b"hvc1\0")
                + full("infe", 2, 0, struct.pack(">HH", 2, 0) + (b"iovl\0" if mode == "overlay" else b"grid\0")))
    refs = 4 if mode == "overlay" else n * n  # libheif refuses an overlay of more than 15 inputs
    iref = full("iref", 0, 0, box("dimg", struct.pack(">HH", 2, refs) + struct.pack(">%dH" % refs, *([1] * refs))))
    grid = struct.pack(">BBBBHH", 0, 0, n - 1, n - 1, 1024, 1024)
    if mode == "overlay":  # version, flags, fill (RGBA), canvas, then each input's offset
        grid = struct.pack(">BB4HHH", 0, 0, 0, 0, 0, 65535, canvas, canvas) + struct.pack(">hh", 0, 0) * refs

    def meta(at):
        iloc = full("iloc", 1, 0, bytes([0x44, 0x00]) + struct.pack(">H", 2) + struct.pack(">HHHHII", 1, 0, 0, 1, at, len(data))
                    + struct.pack(">HHHHII", 2, 1, 0, 1, 0, len(grid)))
        return full("meta", 0, 0, full("hdlr", 0, 0, b"\0" * 4 + b"pict" + b"\0" * 13) + full("pitm", 0, 0, struct.pack(">H", 2))
                    + iloc + iinf + iref + box("iprp", box("ipco", b"".join(properties)) + full("ipma", 0, 0, struct.pack(">I", 2) + ipma))
                    + box("idat", grid))
    ftyp = box("ftyp", b"heic" + b"\0" * 4 + b"mif1heic")
    with open(out, "wb") as f:
        f.write(ftyp + meta(len(ftyp) + len(meta(0)) + 8) + box("mdat", data))


if __name__ == "__main__":
    main(*sys.argv[1:4])
