"""``murano-api`` throughput: package listing and environment reads, 1,000 packages,
on SQLite and on PostgreSQL.

Starts a real ``murano-api`` (in-process engine, request log off) on loopback,
fills the catalog with 1,000 packages (rows written directly, as an upload
would; then ANALYZE, as autovacuum does after a bulk load), then drives it from
CLIENTS threads with keep-alive connections for
SECONDS, RUNS times per request. The first answer to each request is checked
for what it must hold (the packages, the tag filter, the environment), and
every later answer must be that same body. PostgreSQL is 127.0.0.1:5432 (user
postgres, trust), a database made for the run and dropped after it.
Target on a 2-core machine: 500 requests per second or more for each request.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import figures
from sqlalchemy import text

from murano_engine.backend import db
from tests.databases import throwaway_pg_database

PACKAGES = 1000
SECONDS = float(os.environ.get("BENCH_SECONDS", "2"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
CLIENTS = 4
TOKEN = "bench-token"
TARGET = 500


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


def hammer(port: int, path: str, expected: bytes) -> float:
    """Requests per second of CLIENTS keep-alive clients over SECONDS; every answer must
    be ``expected``."""
    counts = [0] * CLIENTS
    errors: list[str] = []
    stop = time.monotonic() + SECONDS

    def client(index: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port)
        headers = {"X-Auth-Token": TOKEN, "Accept": "application/json"}
        try:
            while time.monotonic() < stop:
                connection.request("GET", path, headers=headers)
                response = connection.getresponse()
                body = response.read()
                if response.status != 200 or body != expected:
                    errors.append(f"{path}: {response.status} {body[:200]!r}")
                    return
                counts[index] += 1
        finally:
            connection.close()

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise SystemExit(f"a wrong answer: {errors[0]}")
    return sum(counts) / (time.monotonic() - started)


def _get(port: int, path: str) -> bytes:
    connection = http.client.HTTPConnection("127.0.0.1", port)
    connection.request("GET", path, headers={"X-Auth-Token": TOKEN,
                                             "Accept": "application/json"})
    response = connection.getresponse()
    body = response.read()
    connection.close()
    if response.status != 200:
        raise SystemExit(f"{path}: {response.status} {body[:300]!r}")
    return body


def _check_listing(body: dict) -> None:
    names = [p["fully_qualified_name"] for p in body["packages"]]
    assert len(names) == 20 and len(set(names)) == 20, names
    assert all(n.startswith("com.example.bench.app") for n in names), names
    assert body.get("next_marker"), "a first page of 1,000 packages names the next one"


def _check_search(body: dict) -> None:
    # "app01" is in app0100-app0199; tag3 is on every 20th package from 3
    names = sorted(p["fully_qualified_name"] for p in body["packages"])
    assert names == [f"com.example.bench.app{i:04d}" for i in range(103, 200, 20)], names
    assert all("tag3" in p["tags"] for p in body["packages"])


def _requests(env_id: str) -> list[tuple[str, str, Callable[[dict], None]]]:
    def environment(body: dict) -> None:
        assert body["id"] == env_id and body["name"] == "bench", body

    def environments(body: dict) -> None:
        assert [e["id"] for e in body["environments"]] == [env_id], body

    return [("list packages (20 of 1,000)", "/v1/catalog/packages", _check_listing),
            ("list packages, search + tag", "/v1/catalog/packages?search=app01&tag=tag3",
             _check_search),
            ("show environment", f"/v1/environments/{env_id}", environment),
            ("list environments", "/v1/environments", environments)]


@contextmanager
def _database(kind: str, folder: Path) -> Iterator[str]:
    if kind == "SQLite":
        yield f"sqlite:///{folder}/api.sqlite"
        return
    with throwaway_pg_database("murano_api_bench") as url:
        yield url


def bench(kind: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        with _database(kind, folder) as url:
            (folder / "tokens.yaml").write_text(
                f"{TOKEN}: {{project_id: bench, user_id: b}}\n")
            (folder / "api.conf").write_text(
                f"[DEFAULT]\nbind_port = {port}\n[database]\nconnection = {url}\n"
                "[auth]\ntoken_file = tokens.yaml\n")
            store = db.Store(url)
            db.upgrade(store.engine)
            fill_catalog(store)
            with store.engine.connect() as connection:
                # the planner's statistics, as PostgreSQL's autovacuum gathers them after
                # a bulk load (SQLite keeps none of its own)
                connection.execute(text("ANALYZE"))
                connection.commit()
            store.engine.dispose()
            server = subprocess.Popen(
                [sys.executable, "-m", "murano_engine.server.main", "--quiet",
                 "--config-file", str(folder / "api.conf")], cwd=folder,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                _wait_for(port, server)
                connection = http.client.HTTPConnection("127.0.0.1", port)
                connection.request("POST", "/v1/environments",
                                   body=json.dumps({"name": "bench"}),
                                   headers={"X-Auth-Token": TOKEN,
                                            "Content-Type": "application/json"})
                env_id = json.loads(connection.getresponse().read())["id"]
                figures.method(f"{kind}: {CLIENTS} keep-alive clients for {SECONDS:g} s, "
                               f"{RUNS} runs per request, every answer checked")
                for name, path, check in _requests(env_id):
                    expected = _get(port, path)
                    check(json.loads(expected))
                    hammer(port, path, expected)  # warm up
                    rates = [hammer(port, path, expected) for _ in range(RUNS)]
                    figures.figure(f"{kind}: {name}", rates, "requests/s", TARGET,
                                   higher_is_better=True)
            finally:
                server.terminate()
                server.wait(timeout=10)


def _wait_for(port: int, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + 20
    while True:
        if server.poll() is not None:
            raise SystemExit(f"murano-api exited with {server.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def main() -> int:
    for kind in ("SQLite", "PostgreSQL"):
        bench(kind)
    figures.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
