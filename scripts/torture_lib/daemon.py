"""Starting, killing and asking the daemon under torture, through its own CLI."""
import json
import os
import signal
import subprocess
import time


class Daemon:
    def __init__(self, binary, home, log_path):
        self.binary, self.home, self.log_path = binary, home, log_path
        self.proc = None
        self.starts = 0
        env = dict(os.environ)
        env.pop("PHOTOMEMO_FAILPOINTS", None)  # random kills only, never injected ones
        env["PHOTOMEMO_HOME"] = home
        self.env = env

    def start(self):
        self.starts += 1
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen([self.binary, "serve", "--home", self.home, "--settle", "0.3",
                                      "--rescan-interval", "2", "--log-level", "notice"],
                                     stdout=subprocess.DEVNULL, stderr=log, env=self.env)
        log.close()

    def kill(self):
        """SIGKILL, as a crash or the OOM killer would; returns once the process is gone."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def cli(self, *args, timeout=30):
        """`photomemo ARGS --json`'s result, or None while the daemon is not answering."""
        r = subprocess.run([self.binary, *args, "--json"], capture_output=True, text=True, env=self.env, timeout=timeout)
        if r.returncode != 0:
            return None
        return json.loads(r.stdout) if r.stdout.strip() else {}

    def wait_up(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("the daemon exited with %s at start; see %s" % (self.proc.returncode, self.log_path))
            if self.cli("status") is not None:
                return
            time.sleep(0.05)
        raise RuntimeError("the daemon did not answer within %d s" % timeout)

    def idle(self):
        s = self.cli("status")
        if s is None:
            return False
        j, b = s.get("jobs", {}), s.get("backlog", {})
        return (j.get("queued", 0) == 0 and j.get("running", 0) == 0 and j.get("waiting", 0) == 0
                and b.get("inbox_files", 0) == 0 and b.get("queue_unread_bytes", 0) == 0)

    def paged(self, args, key, cursor_arg="--cursor"):
        """Every item of a cursor-paged command (query, jobs)."""
        out, cursor = [], None
        while True:
            page = self.cli(*args, *([cursor_arg, cursor] if cursor else []))
            if page is None:
                raise RuntimeError("%s failed" % " ".join(args))
            out += page.get(key, [])
            cursor = page.get("cursor")
            if not cursor:
                return out

    def changes(self):
        out, since = [], 0
        while True:
            page = self.cli("changes", "--since", str(since), "--limit", "1000")
            if page is None:
                raise RuntimeError("changes failed")
            batch = page.get("changes", [])
            if not batch:
                return out
            out += batch
            since = page.get("next", batch[-1]["seq"])
