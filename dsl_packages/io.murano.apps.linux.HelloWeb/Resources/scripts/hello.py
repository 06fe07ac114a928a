"""The hello-web service: answers GET / with its greeting and host name.

hello.py serve --host H --port P --home DIR   listen, then serve until SIGTERM in a
                                               process of its own (its pid in
                                               DIR/hello.pid); exits 0 once listening
hello.py gone --pidfile F --timeout S          exit 0 once that process ended

GET /info answers JSON: greeting, hostname, and how many times the server
was installed and configured (lines of DIR/installs and DIR/configures).

It speaks just enough HTTP/1.0 for that, over the socket module: a server starts
fifty of these, and http.server's imports (email, http.client, ssl) would cost
each of them three times what the rest of its start does.
"""

import os
import signal
import socket
import sys
import threading
import time

USAGE = ("usage: hello.py serve --host H --port P --home DIR\n"
         "       hello.py gone --pidfile F [--timeout S]")
#: the most of a request read: its request line and headers
MAX_REQUEST = 8192
#: seconds a client has to send its request
CLIENT_TIMEOUT = 10


def _lines(path: str) -> int:
    try:
        with open(path) as file:
            return len(file.read().splitlines())
    except FileNotFoundError:
        return 0


def _response(status: str, body: str, content_type: str = "text/plain") -> bytes:
    data = body.encode()
    head = (f"HTTP/1.0 {status}\r\nContent-Type: {content_type}; charset=utf-8\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n")
    return head.encode("ascii") + data


def _answer(request: bytes, greeting: str, home: str) -> bytes:
    """The response to ``request`` (its request line and headers)."""
    parts = request.split(b"\r\n", 1)[0].split()
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
        return _response("400 Bad Request", "bad request\n")
    method, path = parts[0], parts[1]
    if method != b"GET":
        return _response("501 Not Implemented", "only GET is served\n")
    if path == b"/":
        return _response("200 OK", f"{greeting} from {socket.gethostname()}\n")
    if path == b"/info":
        import json
        return _response("200 OK", json.dumps({
            "greeting": greeting, "hostname": socket.gethostname(),
            "installs": _lines(os.path.join(home, "installs")),
            "configures": _lines(os.path.join(home, "configures"))}), "application/json")
    return _response("404 Not Found", "not found\n")


def _serve_client(client: socket.socket, greeting: str, home: str) -> None:
    with client:
        client.settimeout(CLIENT_TIMEOUT)
        request = b""
        try:
            while b"\r\n\r\n" not in request and len(request) < MAX_REQUEST:
                chunk = client.recv(MAX_REQUEST)
                if not chunk:
                    break
                request += chunk
            client.sendall(_answer(request, greeting, home))
        except OSError:
            pass  # the client went away or was too slow: nothing to tell it


def serve(host: str, port: int, home: str) -> None:
    """Listen on ``host:port``, then serve from a child in a session of its own.

    The socket listens before this process returns, so whoever started it can
    connect at once: no polling for readiness. A port already taken fails here,
    with the error on stderr and a non-zero exit.
    """
    with open(os.path.join(home, "greeting")) as file:
        greeting = file.read().strip()
    server = socket.create_server((host, port))
    # The child tells it leads its own session before this process returns: from
    # then on nothing that ends the caller's process group ends the service.
    settled, tell = os.pipe()
    child = os.fork()
    if child:
        os.close(tell)
        os.read(settled, 1)
        with open(os.path.join(home, "hello.pid"), "w") as file:
            file.write(str(child))
        return
    os.close(settled)
    os.setsid()
    os.write(tell, b".")
    os.close(tell)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with server:
        while True:
            client, _ = server.accept()
            threading.Thread(target=_serve_client, args=(client, greeting, home),
                             daemon=True).start()


def gone(pidfile: str, timeout: float) -> int:
    with open(pidfile) as file:
        pid = int(file.read())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return 0
        time.sleep(0.1)
    return 1


def _options(words: list[str]) -> dict[str, str]:
    """``--name value`` pairs; exits with the usage on anything else."""
    if len(words) % 2 or any(not w.startswith("--") for w in words[::2]):
        sys.exit(USAGE)
    return {name[2:]: value for name, value in zip(words[::2], words[1::2], strict=True)}


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("serve", "gone"):
        sys.exit(USAGE)
    options = _options(sys.argv[2:])
    try:
        if sys.argv[1] == "serve":
            serve(options["host"], int(options["port"]), options["home"])
            return 0
        return gone(options["pidfile"], float(options.get("timeout", 10)))
    except (KeyError, ValueError) as exc:
        sys.exit(f"hello.py: bad or missing option {exc}\n{USAGE}")


if __name__ == "__main__":
    sys.exit(main())
