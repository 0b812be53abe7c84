"""A socket follower of the change feed (`photomemo subscribe --follow`), reconnecting
with `--subscription ID --since N` after every kill, as a client that must miss nothing."""
import json
import subprocess
import threading
import time


class Follower:
    def __init__(self, daemon, record_type):
        self.daemon, self.type = daemon, record_type
        self.seqs = set()
        self.since = 0
        self.reconnects = 0
        self.stopping = False
        self.lock = threading.Lock()
        self.proc = self._spawn(["--type", record_type, "--fires-on", "create"])
        self.id = self._find_id()
        threading.Thread(target=self._run, daemon=True).start()

    def _spawn(self, args):
        return subprocess.Popen([self.daemon.binary, "subscribe", "--follow", "--json", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, env=self.daemon.env)

    def _find_id(self):
        for _ in range(200):
            subs = self.daemon.cli("subscriptions") or {}
            for s in subs.get("subscriptions", []):
                if s.get("sink") == "socket" and s.get("type") == self.type:
                    return s["id"]
            time.sleep(0.05)
        raise RuntimeError("the %s follower's subscription did not appear" % self.type)

    def _run(self):
        while not self.stopping:
            for line in self.proc.stdout:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if isinstance(e.get("seq"), int):
                    with self.lock:
                        self.seqs.add(e["seq"])
                        self.since = max(self.since, e["seq"])
            self.proc.wait()
            if self.stopping:
                return
            time.sleep(0.05)  # the daemon is restarting: connect again where it stopped
            with self.lock:
                since = self.since
            self.reconnects += 1
            self.proc = self._spawn(["--subscription", self.id, "--since", str(since)])

    def seen(self):
        with self.lock:
            return set(self.seqs)

    def close(self):
        self.stopping = True
        self.proc.terminate()
