"""A webhook receiver: checks each delivery's signature, prints its events, answers 204.
    python3 examples/hook_receiver.py --port 9000 --secret "$SECRET"
"""
import argparse, hashlib, hmac, json, time
from http.server import BaseHTTPRequestHandler, HTTPServer

args = argparse.ArgumentParser()
args.add_argument("--port", type=int, default=9000)
args.add_argument("--secret", required=True)
args = args.parse_args()

class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        ts = self.headers.get("X-Chainlake-Timestamp", "")
        expected = b"sha256=" + hmac.new(args.secret.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest().encode()
        fresh = ts.isdigit() and abs(time.time() - int(ts)) < 300  # an old delivery replayed by someone else
        if not fresh or not hmac.compare_digest(expected, self.headers.get("X-Chainlake-Signature", "").encode()):
            print("refused: bad signature", flush=True)
            return self.send_response(401) or self.end_headers()
        for e in json.loads(body)["events"]:
            print(f"item {e['item']['id']} block {e['block_number']}" if e["type"] == "item" else f"reorg to block {e['block_number']}", flush=True)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *_):
        pass

server = HTTPServer(("127.0.0.1", args.port), Receiver)
print(f"listening on {server.server_address[1]}", flush=True)
server.serve_forever()
