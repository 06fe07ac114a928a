"""The hello-web service: answers GET / with its greeting and host name.

hello.py serve --host H --port P --home DIR   serve until SIGTERM
hello.py wait --host H --port P --timeout S    exit 0 once it answers
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
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def serve(host: str, port: int, home: Path) -> None:
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
    (home / "hello.pid").write_text(str(os.getpid()))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.serve_forever()
    finally:
        server.server_close()


def wait(host: str, port: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://{host}:{port}/info", timeout=1):
                return 0
        except OSError:
            time.sleep(0.1)
    return 1


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
    parser.add_argument("command", choices=["serve", "wait", "gone"])
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    parser.add_argument("--home", type=Path)
    parser.add_argument("--pidfile", type=Path)
    parser.add_argument("--timeout", type=float, default=10)
    options = parser.parse_args()
    if options.command == "serve":
        serve(options.host, options.port, options.home)
        return 0
    if options.command == "wait":
        return wait(options.host, options.port, options.timeout)
    return gone(options.pidfile, options.timeout)


if __name__ == "__main__":
    sys.exit(main())
