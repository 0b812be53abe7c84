#!/usr/bin/env python3
"""Loads gallery pages in headless Chromium and reports what the browser saw, as JSON.

Talks the DevTools protocol over --remote-debugging-pipe (fds 3 and 4, NUL-separated
JSON), so it needs nothing beyond Python's standard library. For each page and each view
(desktop light, phone dark) it reports every URL the page requested, every image with
its naturalWidth, the script elements, any dialog that opened, the body text, how wide
the layout is against the window, the body's background colour, and a screenshot path.
The test decides what is right; this only observes.

usage: gallery-probe.py OUTDIR URL...
"""
import base64, json, os, select, subprocess, sys, time

VIEWS = {"desktop": (1200, 900, False, "light"), "phone": (390, 844, True, "dark")}
FACTS = """(() => ({
  images: [...document.images].map(i => ({src: i.currentSrc || i.src, alt: i.getAttribute('alt'),
                                          complete: i.complete, naturalWidth: i.naturalWidth})),
  scripts: document.scripts.length,
  handlers: [...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name)).filter(n => n.startsWith('on')),
  text: document.body ? document.body.innerText : '',
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  cards: [...document.querySelectorAll('li.card')].map(c => c.id),
  scrollWidth: document.documentElement.scrollWidth,
  clientWidth: document.documentElement.clientWidth,
  background: getComputedStyle(document.body).backgroundColor,
  stylesheets: document.styleSheets.length,
}))()"""


class Browser:
    def __init__(self):
        exe = next(p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome") if os.path.exists(p))
        cmd_r, self.cmd_w = os.pipe()
        self.resp_r, resp_w = os.pipe()
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
                 "--disable-extensions", "--disable-background-networking", "--user-data-dir=" + OUT + "/profile", "about:blank"]
        def pipe_fds():  # in the child: the pipe ends at fds 3 and 4, where Chromium expects them
            a, b = os.dup(cmd_r), os.dup(resp_w)  # first out of the way of 3 and 4
            os.dup2(a, 3); os.dup2(b, 4)
        # close_fds=False: Python's own descriptors are close-on-exec anyway; dup2's are not.
        self.proc = subprocess.Popen([exe] + flags, preexec_fn=pipe_fds, close_fds=False, stdout=subprocess.DEVNULL,
                                     stderr=None if os.environ.get("PROBE_DEBUG") else subprocess.DEVNULL)
        os.close(cmd_r); os.close(resp_w)
        self.buf, self.next_id, self.events = b"", 0, []

    def send(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session: msg["sessionId"] = session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        end = time.time() + timeout
        while time.time() < end:
            m = self.read(end)
            if m.get("id") == self.next_id:
                if "error" in m: raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)
        raise TimeoutError(method)

    def read(self, end):
        while b"\0" not in self.buf:
            ready, _, _ = select.select([self.resp_r], [], [], max(0, end - time.time()))
            if not ready: raise TimeoutError("no message from chromium")
            chunk = os.read(self.resp_r, 1 << 20)
            if not chunk: raise RuntimeError("chromium closed the pipe")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\0", 1)
        return json.loads(line)

    def wait_for(self, method, session, timeout=30):
        end = time.time() + timeout
        while True:
            for m in self.events:
                if m.get("method") == method and m.get("sessionId") == session: return m
            self.events.append(self.read(end))


def probe(browser, url, view, shot):
    width, height, mobile, scheme = VIEWS[view]
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Network", "Runtime"): browser.send(domain + ".enable", session=session)
    browser.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}, session)
    browser.send("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]}, session)
    browser.events.clear()
    browser.send("Page.navigate", {"url": url}, session)
    browser.wait_for("Page.loadEventFired", session)
    facts = browser.send("Runtime.evaluate", {"expression": FACTS, "returnByValue": True}, session)["result"]["value"]
    png = browser.send("Page.captureScreenshot", {"format": "png"}, session)["data"]
    with open(shot, "wb") as f: f.write(base64.b64decode(png))
    mine = [m for m in browser.events if m.get("sessionId") == session]
    facts["requests"] = [m["params"]["request"]["url"] for m in mine if m.get("method") == "Network.requestWillBeSent"]
    facts["failed"] = [m["params"].get("errorText") for m in mine if m.get("method") == "Network.loadingFailed"]
    facts["dialogs"] = [m["params"].get("message") for m in mine if m.get("method") == "Page.javascriptDialogOpening"]
    facts["console"] = [m["params"].get("type") for m in mine if m.get("method") == "Runtime.consoleAPICalled"]
    facts.update(url=url, view=view, screenshot=shot)
    browser.send("Target.closeTarget", {"targetId": target})
    return facts


if __name__ == "__main__":
    OUT, urls = sys.argv[1], sys.argv[2:]
    os.makedirs(OUT, exist_ok=True)
    browser = Browser()
    try:
        report = [probe(browser, u, v, f"{OUT}/page{i}-{v}.png") for i, u in enumerate(urls) for v in VIEWS]
    finally:
        browser.proc.kill(); browser.proc.wait()
    json.dump(report, sys.stdout, indent=1)
