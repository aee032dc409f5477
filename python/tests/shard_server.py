"""An HTTP file server for the shard tests, with faults on purpose.

    shard_server.py DIR [--reset-every N] [--short-every N]

Serves DIR's files over HTTP/1.1 on a loopback port (printed on stdout as
"port N" once it listens), with keep-alive, HEAD (with Last-Modified) and
single byte ranges ("Range: bytes=A-B"), as nginx does. Faults, counted over GET requests:
every Nth answer of --reset-every is cut off by a TCP reset after half its
body; every Nth of --short-every closes the connection after half its body
(a short read). GET /stats answers the counts as JSON. Stops on SIGTERM.
"""

import argparse
import email.utils
import json
import os
import re
import signal
import socket
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.gets = 0
        self.resets = 0
        self.shorts = 0
        self.bytes = 0

    def next_get(self):
        with self.lock:
            self.gets += 1
            return self.gets


def make_handler(root, counts, reset_every, short_every):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes: with Nagle's algorithm
        # the body waits for the client's delayed ACK (40 ms a request).
        disable_nagle_algorithm = True

        def log_message(self, *args):
            pass

        def _file(self):
            name = os.path.normpath(self.path.split("?")[0]).lstrip("/")
            path = os.path.join(root, name)
            if name.startswith("..") or not os.path.isfile(path):
                self.send_error(404)
                return None
            return path

        def do_HEAD(self):
            path = self._file()
            if path is None:
                return
            self.send_response(200)
            self.send_header("Content-Length", str(os.path.getsize(path)))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Last-Modified", email.utils.formatdate(
                os.path.getmtime(path), usegmt=True))
            self.end_headers()

        def do_GET(self):
            if self.path == "/stats":
                with counts.lock:
                    body = json.dumps({"gets": counts.gets,
                                       "resets": counts.resets,
                                       "shorts": counts.shorts,
                                       "bytes": counts.bytes}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            path = self._file()
            if path is None:
                return
            size = os.path.getsize(path)
            begin, end = 0, size - 1
            ranged = re.fullmatch(r"bytes=(\d+)-(\d*)",
                                  self.headers.get("Range", ""))
            if ranged:
                begin = int(ranged.group(1))
                if ranged.group(2):
                    end = min(int(ranged.group(2)), size - 1)
                if begin >= size:
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{size}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
            with open(path, "rb") as f:
                f.seek(begin)
                body = f.read(end - begin + 1)
            n = counts.next_get()
            self.send_response(206 if ranged else 200)
            if ranged:
                self.send_header("Content-Range",
                                 f"bytes {begin}-{end}/{size}")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            cut = reset_every and n % reset_every == 0
            short = short_every and n % short_every == 0
            if cut or short:
                self.wfile.write(body[:len(body) // 2])
                self.wfile.flush()
                with counts.lock:
                    if cut:
                        counts.resets += 1
                    else:
                        counts.shorts += 1
                if cut:  # SO_LINGER 0: close sends RST, not FIN
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER,
                        struct.pack("ii", 1, 0))
                self.close_connection = True
                return
            self.wfile.write(body)
            with counts.lock:
                counts.bytes += len(body)

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--reset-every", type=int, default=0)
    parser.add_argument("--short-every", type=int, default=0)
    args = parser.parse_args()
    counts = Counts()
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0),
        make_handler(os.path.abspath(args.dir), counts, args.reset_every,
                     args.short_every))
    server.daemon_threads = True
    signal.signal(signal.SIGTERM,
                  lambda *_: threading.Thread(target=server.shutdown).start())
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
