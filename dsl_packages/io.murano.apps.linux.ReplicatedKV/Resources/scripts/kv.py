#!/usr/bin/env python3
"""A tiny replicated key-value service (standard library only).

    kv.py address [--host H] --port P
    kv.py serve [--host H] --port P --data DIR --pidfile F [--master HOST:PORT]
    kv.py wait [--host H] --port P [--timeout S]
    kv.py put [--host H] --port P --key K --value V
    kv.py expect [--host H] --port P --key K --value V [--master HOST:PORT] [--timeout S]

--host is the address the cloud gave the node. The service listens on it
when it really is one of this machine's addresses (a server with a network of
its own), else on 127.0.0.1 (servers sharing the host's loopback, which is why
each node has a port of its own); ``address`` prints the HOST:PORT a node
listens at, for the others to reach it. A master accepts PUT /kv/KEY; a
replica refuses writes and copies the master's data (GET /dump) a few times
a second. GET /kv/KEY reads, GET /status describes the node. The service
writes its PID to the pidfile and exits when that file disappears or names
another process, so deleting the node's folder stops it too.
"""

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOOPBACK = "127.0.0.1"


def local_host(candidate):
    """candidate when this machine has that IPv4 address (a bind to it works), else loopback."""
    if not candidate or candidate == LOOPBACK:
        return LOOPBACK
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind((candidate, 0))
    except (OSError, ValueError, OverflowError):  # not assigned here, or not IPv4
        return LOOPBACK
    return candidate


class Store:
    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.version = 0
        self.data = {}
        self.synced_at = None
        self.sync_error = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as stream:
                saved = json.load(stream)
            self.version, self.data = saved["version"], saved["data"]

    def snapshot(self):
        with self.lock:
            return {"version": self.version, "data": dict(self.data)}

    def put(self, key, value):
        with self.lock:
            self.data[key] = value
            self.version += 1
            self._save()
            return self.version

    def replace(self, version, data):
        with self.lock:
            if version != self.version or data != self.data:
                self.version, self.data = version, dict(data)
                self._save()
            self.synced_at = time.time()
            self.sync_error = None

    def _save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as stream:
            json.dump({"version": self.version, "data": self.data}, stream)
        os.replace(tmp, self.path)


def make_handler(store, role, address, master):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):
            pass

        def _send(self, code, body, kind="application/json"):
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/status":
                snap = store.snapshot()
                self._send(200, {"role": role, "address": address,
                                 "port": int(address.rsplit(":", 1)[1]), "master": master,
                                 "version": snap["version"], "keys": len(snap["data"]),
                                 "synced_at": store.synced_at, "sync_error": store.sync_error})
            elif self.path == "/dump":
                self._send(200, store.snapshot())
            elif self.path.startswith("/kv/"):
                value = store.snapshot()["data"].get(self.path[4:])
                if value is None:
                    self._send(404, {"error": "no such key"})
                else:
                    self._send(200, value.encode(), "text/plain; charset=utf-8")
            else:
                self._send(404, {"error": "unknown path"})

        def do_PUT(self):
            if not self.path.startswith("/kv/"):
                self._send(404, {"error": "unknown path"})
            elif role != "master":
                self._send(409, {"error": "read-only replica", "master": master})
            else:
                length = int(self.headers.get("Content-Length") or 0)
                value = self.rfile.read(length).decode()
                self._send(200, {"version": store.put(self.path[4:], value)})

    return Handler


def fetch(address, path, method="GET", body=None, timeout=2.0):
    request = urllib.request.Request(f"http://{address}{path}", data=body, method=method)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read()


def replicate(store, master, stop):
    while not stop.is_set():
        try:
            snap = json.loads(fetch(master, "/dump"))
            store.replace(snap["version"], snap["data"])
        except (OSError, ValueError, KeyError) as exc:
            store.sync_error = str(exc)
        stop.wait(0.25)


def watch_pidfile(pidfile, stop, server):
    me = str(os.getpid())
    while not stop.is_set():
        try:
            with open(pidfile, encoding="utf-8") as stream:
                owner = stream.read().strip()
        except OSError:
            owner = None
        if owner != me:
            stop.set()
            server.shutdown()
            return
        stop.wait(0.5)


def serve(options):
    os.makedirs(options.data, exist_ok=True)
    role = "replica" if options.master else "master"
    store = Store(os.path.join(options.data, "store.json"))
    address = f"{options.host}:{options.port}"
    server = ThreadingHTTPServer((options.host, options.port),
                                 make_handler(store, role, address, options.master))
    with open(options.pidfile + ".tmp", "w", encoding="utf-8") as stream:
        stream.write(str(os.getpid()))
    os.replace(options.pidfile + ".tmp", options.pidfile)
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    threading.Thread(target=watch_pidfile, args=(options.pidfile, stop, server),
                     daemon=True).start()
    if options.master:
        threading.Thread(target=replicate, args=(store, options.master, stop),
                         daemon=True).start()
    print(f"{role} serving on {address}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        stop.set()
        server.server_close()
        try:
            with open(options.pidfile, encoding="utf-8") as stream:
                if stream.read().strip() == str(os.getpid()):
                    os.remove(options.pidfile)
        except OSError:
            pass
    return 0


def show_address(options):
    print(f"{options.host}:{options.port}")
    return 0


def wait(options):
    deadline = time.time() + options.timeout
    while time.time() < deadline:
        try:
            json.loads(fetch(f"{options.host}:{options.port}", "/status", timeout=1.0))
            return 0
        except (OSError, ValueError):
            time.sleep(0.1)
    return 1


def put(options):
    address = f"{options.host}:{options.port}"
    answer = json.loads(fetch(address, f"/kv/{options.key}", "PUT", options.value.encode()))
    print(f"wrote {options.key} on {address} (version {answer['version']})")
    return 0


def expect(options):
    address = f"{options.host}:{options.port}"
    status = json.loads(fetch(address, "/status"))
    if options.master and status.get("master") != options.master:
        print(f"{address} follows {status.get('master')}, "
              f"not {options.master}", file=sys.stderr)
        return 1
    deadline = time.time() + options.timeout
    seen = None
    while time.time() < deadline:
        try:
            seen = fetch(address, f"/kv/{options.key}").decode()
            if seen == options.value:
                print(f"{address} serves {options.key}={seen} "
                      f"from master {status.get('master')}")
                return 0
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
        time.sleep(0.2)
    status = json.loads(fetch(address, "/status"))
    print(f"{address} still serves {options.key}={seen!r} after "
          f"{options.timeout}s (sync error: {status.get('sync_error')})", file=sys.stderr)
    return 1


def main(argv=None):
    parser = argparse.ArgumentParser(prog="kv.py")
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("address", "serve", "wait", "put", "expect"):
        command = commands.add_parser(name)
        command.add_argument("--host", default="", help="the node's address in the cloud")
        command.add_argument("--port", type=int, required=True)
        command.add_argument("--timeout", type=float, default=15.0)
        if name == "serve":
            command.add_argument("--data", required=True)
            command.add_argument("--pidfile", required=True)
        if name in ("serve", "expect"):
            command.add_argument("--master", default="")
        if name in ("put", "expect"):
            command.add_argument("--key", required=True)
            command.add_argument("--value", required=True)
    options = parser.parse_args(argv)
    options.host = local_host(options.host)
    return {"address": show_address, "serve": serve, "wait": wait, "put": put,
            "expect": expect}[options.command](options)


if __name__ == "__main__":
    sys.exit(main())
