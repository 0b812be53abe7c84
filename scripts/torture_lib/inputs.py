"""The torture run's inputs: distinct photos (small test JPEGs, each with a unique
trailer after the EOI marker) and memo lines with a unique field `n`, in a shuffled
schedule where some memos come before their photo, some after, and some have none."""
import hashlib
import json
import os
import random

SOURCES = ["Canon_40D.jpg", "Nikon_D70.jpg", "Pentax_K10D.jpg"]  # 8-14 KB each: minutes, not hours


class Inputs:
    def __init__(self, photos_dir, n_photos, n_memos, rng):
        originals = [open(os.path.join(photos_dir, s), "rb").read() for s in SOURCES]
        self.photos = {}  # name -> sha256 of its bytes
        self.bytes = {}
        for i in range(n_photos):
            name = "t%04d.jpg" % i
            data = originals[i % len(originals)] + b"torture photo %d\n" % i
            self.photos[name] = hashlib.sha256(data).hexdigest()
            self.bytes[name] = data
        # Memo i: a third join a photo written after the line, a third a photo dropped
        # before it, the rest have no photo (as many as there are photos to join).
        self.memos = {}  # n -> photo name or None
        names = list(self.photos)
        rng.shuffle(names)
        for n in range(n_memos):
            kind = n % 3
            self.memos[n] = names.pop() if kind in (0, 1) and names else None
        # The schedule: ("photo", name) and ("memo", n) steps.
        later = {m: p for m, p in self.memos.items() if p and m % 3 == 1}   # photo first, memo later
        first = {m: p for m, p in self.memos.items() if p and m % 3 == 0}   # memo first, photo later
        steps = [("photo", p) for p in self.photos if p not in first.values()] + \
                [("memo", m) for m in self.memos if m not in later]
        rng.shuffle(steps)
        for m, p in first.items():  # the photo somewhere after its memo
            at = steps.index(("memo", m))
            steps.insert(rng.randint(at + 1, len(steps)), ("photo", p))
        for m, p in later.items():  # the memo somewhere after its photo
            at = steps.index(("photo", p))
            steps.insert(rng.randint(at + 1, len(steps)), ("memo", m))
        self.steps = steps

    def line(self, n):
        photo = self.memos[n]
        memo = {"memo": "torture memo %d" % n, "key": "torture-%d" % n, "fields": {"n": n}}
        if photo:
            memo["photo"] = photo
        else:
            memo["type"] = "Task"
        return json.dumps(memo) + "\n"

    def feed(self, home, step):
        """One input the way DESIGN.md says: a photo written as .NAME.part and renamed in,
        a memo appended to queue.jsonl as one whole line."""
        kind, what = step
        if kind == "photo":
            tmp = os.path.join(home, "inbox", ".%s.part" % what)
            with open(tmp, "wb") as f:
                f.write(self.bytes[what])
            os.rename(tmp, os.path.join(home, "inbox", what))
        else:
            fd = os.open(os.path.join(home, "queue.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.write(fd, self.line(what).encode())
            os.close(fd)
