#!/usr/bin/env python3
"""Writes the seed corpora in Fuzz/corpus/<target>/ (checked in; rerun after changing it).

The probe's seeds come from ../shared/testdata/photos: the first 4 KiB of every photo
(headers and the start of the data), the small photos whole, the first 64 KiB of the
HEIC, plus hand-built PNG, WebP and HEIC headers, so the corpus stays small. The HEIF
parser's are the HEIC's boxes (heif_seeds); compress's, portraits it decodes at 3/8. Files named regression-* are inputs a fuzz
run found, checked in by hand so every run tries them again; this script leaves them be."""
import os, struct, sys, zlib

ROOT = os.path.dirname(os.path.abspath(__file__))
PHOTOS = os.path.join(ROOT, "..", "..", "shared", "testdata", "photos")
if len(sys.argv) > 1:
    PHOTOS = sys.argv[1]


def write(target, name, data):
    folder = os.path.join(ROOT, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def lines(target, items):
    for i, item in enumerate(items):
        write(target, f"{i:03d}", item)


JOB_LINES = [
    '{"photo":"IMG_0001.jpg","memo":"lunch receipt","fields":{"salesPrice":1200}}',
    '{"photo":"IMG_0001.jpg","memo":"lunch receipt","type":"Memo","fields":{"code":"A-001","salesPrice":1200,'
    '"costRate":0.35,"date":"2026-11-29T12:00:00Z"},"owner":"alice","key":"client-chosen-idempotency-key"}',
    '{"photo":"IMG_0001.jpg","memo":"lunch receipt","type":"Houses","fields":{"code":"A-001","salesPrice":1200,'
    '"costRate":0.35,"tags":["a","b"],"parent":{"ref":"r1","action":"deleteSelf"}}}',
    '{"photo":"A-002-new.jpg","record":"r3c1f0e0a4e2b7d915c6a08f","type":"GoodsMaster","memo":"goods A-002",'
    '"fields":{"name":"renamed","costRate":0.45,"salesPrice":600}}',
    '{"memo":"call the plumber","type":"Task","fields":{"priority":2,"code":"007","done":false}}',
    '{"photo":"dish1.jpg","type":"Photo","memo":"dish 1","fields":{"restaurant":{"ref":"r9","action":"none"}}}',
    '{"photo":"t1.jpg","type":"Task","memo":"buy milk","fields":{"date":"2026-12-03T09:00:00Z","priority":2}}',
    '{"photo":"h1.jpg","type":"Houses","memo":"sunny, two floors","fields":{"address":"1-2-3 Shibuya, Tokyo"}}',
    '{"photo":"../../etc/passwd"}',
    '{"photo":""}',
    '{"photo":"x.jpg","memo":"esc \\"quoted\\" \\u00e9\\ud83d\\ude00 \\n\\t\\\\ \\/"}',
    '{"memo":"numbers","fields":{"a":-0,"b":1e308,"c":-1.5E-3,"d":9223372036854775807,"e":9223372036854775808}}',
    '{"photo":"a.jpg","fields":{"id":1}}',
    '{"photo":"a.jpg","extra":true}',
    '[1,2,3]',
    '{"memo":"deep","fields":{"l":[[[["x"]]]]}}',
    'not json',
]

# XMP sidecars as Lightroom, darktable, digiKam and Apple Photos' export write them, and as
# an attacker would (Tests/PhotomemoCoreTests/XMPMemoTests.swift has the same shapes).
RDF = 'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"'
DC = 'xmlns:dc="http://purl.org/dc/elements/1.1/"'
XMP = 'xmlns:xmp="http://ns.adobe.com/xap/1.0/"'
LOLS = '<!ENTITY lol0 "lol">' + ''.join('<!ENTITY lol%d "%s">' % (i, ('&lol%d;' % (i - 1)) * 10) for i in range(1, 10))
XMP_SIDECARS = [
    '<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="Adobe XMP Core 7.0"><rdf:RDF %s><rdf:Description rdf:about="" %s %s '
    'xmp:Rating="4"><dc:title><rdf:Alt><rdf:li xml:lang="x-default">Sakura</rdf:li></rdf:Alt></dc:title><dc:description>'
    '<rdf:Alt><rdf:li xml:lang="x-default">lunch receipt &amp; tip</rdf:li></rdf:Alt></dc:description><dc:subject><rdf:Bag>'
    '<rdf:li>food</rdf:li><rdf:li>receipts</rdf:li></rdf:Bag></dc:subject></rdf:Description></rdf:RDF></x:xmpmeta>' % (RDF, XMP, DC),
    '<?xml version="1.0" encoding="UTF-8"?>\n<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF %s><rdf:Description rdf:about="" %s %s '
    'xmlns:darktable="http://darktable.sf.net/" xmp:Rating="2" darktable:history_end="1"><darktable:history><rdf:Seq>'
    '<rdf:li darktable:num="0" darktable:operation="flip"/></rdf:Seq></darktable:history><dc:subject><rdf:Seq><rdf:li>beach'
    '</rdf:li></rdf:Seq></dc:subject></rdf:Description></rdf:RDF></x:xmpmeta>' % (RDF, XMP, DC),
    '<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF %s><rdf:Description %s %s>'
    '<dc:description><rdf:Alt><rdf:li xml:lang="ja-JP">\u591c\u666f</rdf:li><rdf:li xml:lang="x-default">night view</rdf:li>'
    '</rdf:Alt></dc:description></rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>' % (RDF, XMP, DC),
    '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF %s><rdf:Description %s %s><dc:title>Receipt</dc:title><dc:description>Coffee'
    '</dc:description><xmp:Rating>3</xmp:Rating></rdf:Description></rdf:RDF></x:xmpmeta>' % (RDF, XMP, DC),
    '<?xml version="1.0"?><!DOCTYPE x [%s]><x %s><dc:description>&lol9;</dc:description></x>' % (LOLS, DC),
    '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><x %s><dc:title>&xxe;</dc:title></x>' % DC,
    '<a %s xmp:Rating="four"/>' % XMP,
]

PREDICATES = [
    'salesPrice >= 100 AND salesPrice <= 500\n-salesPrice,costRate',
    'address == "Tokyo"',
    'name BEGINSWITH "A"\nname',
    'memo CONTAINS "receipt"\n-created\nGoodsMaster',
    'tags CONTAINS "x"',
    'code IN {"A","B","A-001"}\ncode,-salesPrice',
    'taken BETWEEN {DATE("2026-01-01"), DATE("2026-02-01")}',
    'date > DATE("2026-11-29T12:00:00Z") OR sold == true\ndate',
    'NOT (a == 1 OR b != false) AND c < -2.5',
    'a == 1 or b == 2 and c == 3',
    'TRUEPREDICATE\n-salesPrice\n\neyJyb3ciOjEsInYiOltudWxsXX0=',
    'salesPrice >= 1000 AND memo CONTAINS "receipt"\n-salesPrice,created',
    'costRate BETWEEN {0.1, 0.5}\n+costRate',
    'parent == "r1" AND owner == "alice"\nmodified',
    'width > 100 AND height <= 4000 AND type == "GoodsMaster"',
    'name == "\\u00c1mbar" OR memo CONTAINS "東京"',
    '((((salesPrice > 1))))',
]

REQUESTS = [
    '{"id":1,"cmd":"status"}',
    '{"id":2,"cmd":"jobs","state":"failed","limit":10,"cursor":"40"}',
    '{"id":3,"cmd":"job","job":"12"}',
    '{"id":4,"cmd":"enqueue","job":{"photo":"IMG_0001.jpg","memo":"lunch","fields":{"salesPrice":1200},"owner":"alice"}}',
    '{"id":5,"cmd":"retry","job":7}',
    '{"id":6,"cmd":"cancel","job":8}',
    '{"id":7,"cmd":"pause","stage":"validate"}',
    '{"id":8,"cmd":"resume"}',
    '{"id":9,"cmd":"reload"}',
    '{"id":10,"cmd":"query","predicate":"salesPrice >= 1000 AND memo CONTAINS \\"receipt\\"","type":"GoodsMaster",'
    '"sort":"-salesPrice,created","limit":50,"cursor":"eyJyb3ciOjEsInYiOltdfQ=="}',
    '{"id":11,"cmd":"get","record":"r3c1f0e0a4e2b7d915c6a08f"}',
    '{"id":12,"cmd":"update","record":"r1","memo":"new","if_tag":"7","fields":{"salesPrice":1500,"old":null},'
    '"acl":{"read":["bob"],"write":[],"public":true}}',
    '{"id":13,"cmd":"delete","record":"r1"}',
    '{"id":14,"cmd":"asset","record":"r1","rendition":"display"}',
    '{"id":15,"cmd":"subscribe","type":"GoodsMaster","predicate":"salesPrice > 10","fires_on":["create","update"],'
    '"webhook":"http://127.0.0.1:9/hook","secret":"s","alert":"new {memo}","since":3}',
    '{"id":16,"cmd":"subscribe","type":"Memo","exec":["/bin/cat"],"fires_on":"create,delete","follow":false}',
    '{"id":17,"cmd":"unsubscribe","subscription":"s1"}',
    '{"id":18,"cmd":"subscriptions","retry_failed":"s1"}',
    '{"id":19,"cmd":"changes","since":"6","limit":100}',
    '{"id":20,"cmd":"metrics"}',
    '{"id":21,"cmd":"watch"}',
    '{"id":"x","cmd":"stauts"}',
    '{"cmd":3}',
    '   ',
]

JSON_DOCS = [
    '{"a":[1,-2,3.5,1e-7,true,false,null],"b":{"c":"d\\u0000\\ud800\\udc00"}}',
    '[]', '{}', '0', '-0.0', '"\\"\\\\\\/\\b\\f\\n\\r\\t"', '12345678901234567890',
    ' \t\r\n[ [ [ ] ] ] ', '{"k":1,"k":2}', '[1,]', '"\\ud83d"', '1.7976931348623157e308',
]


def png(width, height):
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    raw = b"".join(b"\x00" + b"\x80\x40\x20" * width for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def riff(chunk):
    body = b"WEBP" + chunk
    return b"RIFF" + struct.pack("<I", len(body)) + body


def webp_vp8(w, h):
    frame = b"\x10\x02\x00\x9d\x01\x2a" + struct.pack("<HH", w, h) + b"\x00" * 8
    return riff(b"VP8 " + struct.pack("<I", len(frame)) + frame)


def webp_vp8l(w, h):
    bits = (w - 1) | (h - 1) << 14
    body = b"\x2f" + struct.pack("<I", bits) + b"\x00" * 8
    return riff(b"VP8L" + struct.pack("<I", len(body)) + body)


def webp_vp8x(w, h):
    body = b"\x00\x00\x00\x00" + struct.pack("<I", w - 1)[:3] + struct.pack("<I", h - 1)[:3]
    return riff(b"VP8X" + struct.pack("<I", len(body)) + body)


def box(kind, body):
    return struct.pack(">I", 8 + len(body)) + kind + body


def heic(sizes, large=False):
    ispes = b"".join(box(b"ispe", b"\x00\x00\x00\x00" + struct.pack(">II", w, h)) for w, h in sizes)
    meta = box(b"meta", b"\x00\x00\x00\x00" + box(b"hdlr", b"\x00" * 24) + box(b"iprp", box(b"ipco", ispes)))
    ftyp = box(b"ftyp", b"heic\x00\x00\x00\x00mif1heic")
    if large:  # the same meta with a 64-bit box size
        meta = struct.pack(">I", 1) + b"meta" + struct.pack(">Q", 16 + len(meta) - 8) + meta[8:]
    return ftyp + meta + box(b"mdat", b"\x00" * 16)


def probe_seeds():
    names = sorted(n for n in os.listdir(PHOTOS) if n.lower().endswith((".jpg", ".jpeg", ".heic", ".png", ".webp")))
    for n in names:
        data = open(os.path.join(PHOTOS, n), "rb").read()
        write("probe", n + ".head4k", data[:4096])
        if len(data) <= 16384:
            write("probe", n, data)
        if n.lower().endswith(".heic"):
            write("probe", n + ".head64k", data[:65536])
    write("probe", "rgb-3x2.png", png(3, 2))
    write("probe", "rgb-1x1.png", png(1, 1))
    write("probe", "vp8-640x480.webp", webp_vp8(640, 480))
    write("probe", "vp8l-17x9.webp", webp_vp8l(17, 9))
    write("probe", "vp8x-4032x3024.webp", webp_vp8x(4032, 3024))
    write("probe", "ispe-two.heic", heic([(512, 512), (4032, 3024)]))
    write("probe", "ispe-64bit-box.heic", heic([(100, 200)], large=True))


def heif_seeds():
    """The HEIF parser's seeds: IMG_5195.HEIC's boxes with every mdat extent in iloc moved
    into a 64-byte mdat (a whole description in ~3 KiB), and the photo's first 4 KiB."""
    data = bytearray(open(os.path.join(PHOTOS, "IMG_5195.HEIC"), "rb").read())
    write("heif", "IMG_5195.HEIC.head4k", bytes(data[:4096]))
    i = 0
    while i + 8 <= len(data):
        size, kind = struct.unpack(">I4s", data[i:i + 8])
        if kind == b"mdat":
            break
        i += size
    head, mdat = data[:i], i + 8
    at = head.find(b"iloc") + 4
    version = head[at]
    offset_size, length_size = head[at + 4] >> 4, head[at + 4] & 15
    base_size, index_size = head[at + 5] >> 4, (head[at + 5] & 15) if version else 0
    count, at = (struct.unpack(">H", head[at + 6:at + 8])[0], at + 8) if version < 2 else (struct.unpack(">I", head[at + 6:at + 10])[0], at + 10)
    for _ in range(count):
        at += 2 if version < 2 else 4
        method = (struct.unpack(">H", head[at:at + 2])[0] & 15) if version else 0
        at += (2 if version else 0) + 2 + base_size
        extents = struct.unpack(">H", head[at:at + 2])[0]
        at += 2
        for _ in range(extents):
            at += index_size
            if method == 0:
                head[at:at + offset_size] = mdat.to_bytes(offset_size, "big")
                head[at + offset_size:at + offset_size + length_size] = (64).to_bytes(length_size, "big")
            at += offset_size + length_size
    write("heif", "IMG_5195.HEIC.meta", bytes(head) + box(b"mdat", bytes(range(64))))


def compress_seeds():
    """fuzz-compress's own seeds (it reads the probe's too): 600x800 portraits, which it
    decodes at 3/8 for its 200 px rendition (1/4 is short of it), so jpeg_idct.h's inverse
    DCTs run: 4:4:4 (the 3x3) and 4:2:0 (the 6x6 for chroma), baseline and progressive, and
    one with EXIF orientation 6. Made with Pillow; skipped without it."""
    try:
        from PIL import Image
    except ImportError:
        print("seed-corpus.py: no Pillow; compress's seeds are left as they are", file=sys.stderr)
        return
    import io
    grey = Image.effect_mandelbrot((600, 800), (-2.0, -1.5, 1.0, 1.5), 60)
    photo = Image.merge("RGB", (grey, grey.transpose(Image.Transpose.FLIP_LEFT_RIGHT), Image.linear_gradient("L").resize((600, 800))))
    for name, options in [("444", {"subsampling": 0}), ("420", {"subsampling": 2}),
                          ("420-progressive", {"subsampling": 2, "progressive": True})]:
        out = io.BytesIO()
        photo.save(out, "JPEG", quality=40, **options)
        write("compress", f"portrait-600x800-{name}.jpg", out.getvalue())
    exif = Image.Exif()
    exif[0x0112] = 6
    out = io.BytesIO()
    photo.save(out, "JPEG", quality=40, subsampling=0, exif=exif.tobytes())
    write("compress", "portrait-600x800-444-orientation6.jpg", out.getvalue())


lines("memojob", JOB_LINES)
lines("xmp", XMP_SIDECARS)
lines("predicate", PREDICATES)
lines("request", REQUESTS)
lines("json", JSON_DOCS + JOB_LINES[:4] + REQUESTS[:4])
probe_seeds()
heif_seeds()
compress_seeds()
