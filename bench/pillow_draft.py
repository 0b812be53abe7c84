"""Pillow peer for photomemo-bench: the fastest script people write today.

Decodes each JPEG once at a DCT scale chosen by draft() (asking for exactly the
display size, in stored orientation), applies the EXIF orientation, resizes to 860 px
wide (bicubic, like photomemo), and makes the 200x200 thumbnail from the display image.
usage: python3 pillow_draft.py OUTDIR FILE...
"""
import sys

from PIL import Image, ImageOps

WIDTH = 860
out = sys.argv[1]
for i, path in enumerate(sys.argv[2:]):
    im = Image.open(path)
    orientation = im.getexif().get(0x0112, 1)
    w, h = im.size
    upright_w, upright_h = (h, w) if orientation in (5, 6, 7, 8) else (w, h)
    need = (WIDTH, round(upright_h * WIDTH / upright_w))
    im.draft("RGB", need if orientation not in (5, 6, 7, 8) else need[::-1])
    im = ImageOps.exif_transpose(im)
    w, h = im.size
    display = im.resize((WIDTH, round(h * WIDTH / w)), Image.Resampling.BICUBIC)
    display.save(f"{out}/{i}_d.jpg", quality=90, optimize=True, subsampling=2)
    thumb = ImageOps.fit(display, (200, 200), Image.Resampling.BICUBIC)
    thumb.save(f"{out}/{i}_t.jpg", quality=70, optimize=True, subsampling=2)
