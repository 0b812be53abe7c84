"""Pillow peer for `photomemo-bench --e2e`: the same job as photomemo's default one, end
to end, as a careful script would do it: hash each photo, skip a duplicate, check format
and size limits, decode once at a DCT scale (draft), make the display (860 px wide) and
the 200x200 thumbnail, store the original (renamed in) and both renditions under content
addresses with fsync, and record it in SQLite. One process per core.
usage: python3 pillow_ingest.py HOME WORKERS FILE...
"""
import hashlib, io, json, os, sqlite3, sys
from multiprocessing import Pool

from PIL import Image, ImageOps

WIDTH = 860
home = sys.argv[1]
store = os.path.join(home, "store")


def put(data_or_path, sha):
    final = os.path.join(store, sha[:2], sha[2:4], sha)
    os.makedirs(os.path.dirname(final), exist_ok=True)
    if isinstance(data_or_path, str):
        os.rename(data_or_path, final)
    else:
        with open(final + ".tmp", "wb") as f:
            f.write(data_or_path)
            f.flush()
            os.fsync(f.fileno())
        os.rename(final + ".tmp", final)
    return final


def encode(im, quality):
    b = io.BytesIO()
    im.save(b, "JPEG", quality=quality, optimize=True, subsampling=2)
    return b.getvalue()


def ingest(path):
    db = sqlite3.connect(os.path.join(home, "index.sqlite"), timeout=30)
    data = open(path, "rb").read()
    sha = hashlib.sha256(data).hexdigest()
    if db.execute("SELECT 1 FROM records WHERE sha256 = ?", (sha,)).fetchone():
        return
    im = Image.open(io.BytesIO(data))
    if im.format not in ("JPEG", "PNG", "WEBP") or im.size[0] * im.size[1] > 100_000_000 or len(data) > 52_428_800:
        return
    orientation = im.getexif().get(0x0112, 1)
    w, h = im.size
    swapped = orientation in (5, 6, 7, 8)
    upright_w, upright_h = (h, w) if swapped else (w, h)
    need = (WIDTH, round(upright_h * WIDTH / upright_w))
    im.draft("RGB", need[::-1] if swapped else need)
    im = ImageOps.exif_transpose(im)
    display = im.resize((WIDTH, round(im.size[1] * WIDTH / im.size[0])), Image.Resampling.BICUBIC)
    thumb = ImageOps.fit(display, (200, 200), Image.Resampling.BICUBIC)
    assets = {"original": put(path, sha)}
    for name, img, q in (("display", display, 90), ("thumbnail", thumb, 70)):
        b = encode(img, q)
        assets[name] = put(b, hashlib.sha256(b).hexdigest())
    with db:
        db.execute("INSERT INTO records (sha256, type, assets) VALUES (?, 'Photo', ?)", (sha, json.dumps(assets)))
    db.close()


if __name__ == "__main__":
    os.makedirs(store, exist_ok=True)
    db = sqlite3.connect(os.path.join(home, "index.sqlite"))
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS records (id INTEGER PRIMARY KEY, sha256 TEXT UNIQUE, type TEXT, assets TEXT)")
    db.commit()
    db.close()
    with Pool(int(sys.argv[2])) as pool:
        for _ in pool.imap_unordered(ingest, sys.argv[3:], chunksize=1):
            pass
