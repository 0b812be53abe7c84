"""The torture run's webhook receiver: a thread in the torture process (so it outlives
every daemon kill) that checks each delivery's HMAC and keeps its event id and change
number."""
import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self, secret):
        self.secret = secret.encode()
        self.lock = threading.Lock()
        self.deliveries = []  # (event_id, seq, record, signature_ok)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                expected = "sha256=" + hmac.new(receiver.secret, body, hashlib.sha256).hexdigest()
                ok = hmac.compare_digest(expected, self.headers.get("X-Photomemo-Signature", ""))
                event = json.loads(body)
                with receiver.lock:
                    receiver.deliveries.append((self.headers.get("X-Photomemo-Event"), event.get("seq"),
                                                event.get("record"), ok))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/hook" % self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def snapshot(self):
        with self.lock:
            return list(self.deliveries)

    def close(self):
        self.server.shutdown()
