"""A webhook receiver for the notify tests: answers 500 to the first FAIL requests, then
200; logs every request (event id, whether the HMAC signature verifies, body) as a JSON
line. usage: receiver.py PORTFILE LOGFILE SECRET FAIL"""
import hashlib
import hmac
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

port_file, log_file, secret, fail = sys.argv[1], sys.argv[2], sys.argv[3].encode(), int(sys.argv[4])
count = 0


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        global count
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        count += 1
        status = 500 if count <= fail else 200
        with open(log_file, "a") as f:
            f.write(json.dumps({"event_id": self.headers.get("X-Photomemo-Event"), "status": status,
                                "signature_ok": hmac.compare_digest(expected, self.headers.get("X-Photomemo-Signature", "")),
                                "body": json.loads(body)}) + "\n")
        self.send_response(status)
        self.end_headers()

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
with open(port_file, "w") as f:
    f.write(str(server.server_port))
server.serve_forever()
