"""The hello-web service: answers GET / with its greeting and host name.

hello.py serve --host H --port P --home DIR   listen, then serve until SIGTERM in a
                                               process of its own (its pid in
                                               DIR/hello.pid); exits 0 once listening
hello.py gone --pidfile F --timeout S          exit 0 once that process ended

GET /info answers JSON: greeting, hostname, and how many times the server
was installed and configured (lines of DIR/installs and DIR/configures).
"""

import argparse
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def serve(host: str, port: int, home: Path) -> None:
    """Listen on ``host:port``, then serve from a child in a session of its own.

    The socket listens before this process returns, so whoever started it can
    connect at once: no polling for readiness. A port already taken fails here,
    with the error on stderr and a non-zero exit.
    """
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    greeting = (home / "greeting").read_text().strip()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path == "/info":
                body = json.dumps({"greeting": greeting, "hostname": socket.gethostname(),
                                   "installs": _lines(home / "installs"),
                                   "configures": _lines(home / "configures")})
            elif self.path == "/":
                body = f"{greeting} from {socket.gethostname()}\n"
            else:
                self.send_error(404)
                return
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    # The child tells it leads its own session before this process returns: from
    # then on nothing that ends the caller's process group ends the service.
    settled, tell = os.pipe()
    child = os.fork()
    if child:
        os.close(tell)
        os.read(settled, 1)
        (home / "hello.pid").write_text(str(child))
        return
    os.close(settled)
    os.setsid()
    os.write(tell, b".")
    os.close(tell)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.serve_forever()
    finally:
        server.server_close()


def gone(pidfile: Path, timeout: float) -> int:
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return 0
        time.sleep(0.1)
    return 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["serve", "gone"])
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    parser.add_argument("--home", type=Path)
    parser.add_argument("--pidfile", type=Path)
    parser.add_argument("--timeout", type=float, default=10)
    options = parser.parse_args()
    if options.command == "serve":
        serve(options.host, options.port, options.home)
        return 0
    return gone(options.pidfile, options.timeout)


if __name__ == "__main__":
    sys.exit(main())
