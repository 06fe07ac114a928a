"""``murano-api`` throughput: package listing and environment reads, 1,000 packages.

Starts a real ``murano-api`` (SQLite, in-process engine, request log off) on
loopback, fills the catalog with 1,000 packages (rows written directly, as an
upload would), then drives it from client threads with keep-alive
connections. Target on a 2-core machine: above 500 requests per second for
package listing.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from murano_engine.api import db

PACKAGES = 1000
SECONDS = 4.0
CLIENTS = 4
TOKEN = "bench-token"


def fill_catalog(store: db.Store) -> None:
    archive = b"PK\x05\x06" + b"\0" * 18
    with store.write() as session:
        tags = [db.Tag(name=f"tag{i}") for i in range(20)]
        category = db.Category(name="Bench")
        session.add_all([*tags, category])
        session.flush()
        for i in range(PACKAGES):
            package = db.Package(
                fully_qualified_name=f"com.example.bench.app{i:04d}", name=f"Bench app {i}",
                version="1.0.0", type="Application", author="bench", description="x" * 200,
                is_public=i % 2 == 0, owner_id="bench", archive=archive,
                archive_hash=hashlib.sha256(archive).hexdigest())
            session.add(package)
            session.flush()
            session.add(db.ClassDefinition(name=f"com.example.bench.App{i}",
                                           package_id=package.id))
            session.execute(db.package_to_tag.insert().values(
                package_id=package.id, tag_id=tags[i % 20].id))
            session.execute(db.package_to_category.insert().values(
                package_id=package.id, category_id=category.id))


def hammer(port: int, path: str) -> float:
    """Requests per second of CLIENTS keep-alive clients over SECONDS."""
    counts = [0] * CLIENTS
    stop = time.monotonic() + SECONDS

    def client(index: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port)
        headers = {"X-Auth-Token": TOKEN, "Accept": "application/json"}
        while time.monotonic() < stop:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            body = response.read()
            if response.status != 200:
                raise RuntimeError(f"{path}: {response.status} {body[:200]!r}")
            counts[index] += 1
        connection.close()

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.monotonic() - started)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        (folder / "tokens.yaml").write_text(f"{TOKEN}: {{project_id: bench, user_id: b}}\n")
        (folder / "api.conf").write_text(
            f"[DEFAULT]\nbind_port = {port}\n[database]\nconnection = sqlite:///api.sqlite\n"
            "[auth]\ntoken_file = tokens.yaml\n")
        store = db.Store(f"sqlite:///{folder}/api.sqlite")
        db.upgrade(store.engine)
        fill_catalog(store)
        store.engine.dispose()
        server = subprocess.Popen([sys.executable, "-m", "murano_engine.api.server", "--quiet",
                                   "--config-file", str(folder / "api.conf")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            connection = http.client.HTTPConnection("127.0.0.1", port)
            connection.request("POST", "/v1/environments", body=json.dumps({"name": "bench"}),
                               headers={"X-Auth-Token": TOKEN,
                                        "Content-Type": "application/json"})
            env_id = json.loads(connection.getresponse().read())["id"]
            hammer(port, "/v1/catalog/packages")
            figures = {
                "list packages (20 of 1,000)": hammer(port, "/v1/catalog/packages"),
                "list packages, search + tag": hammer(
                    port, "/v1/catalog/packages?search=app1&tag=tag3"),
                "show environment": hammer(port, f"/v1/environments/{env_id}"),
                "list environments": hammer(port, "/v1/environments"),
            }
        finally:
            server.terminate()
            server.wait(timeout=10)
    for name, rate in figures.items():
        print(f"{name:32s} {rate:8.0f} requests/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
