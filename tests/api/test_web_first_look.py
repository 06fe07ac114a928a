"""What a new user meets first of ``murano-api``: its start log and the browser's icon."""

from __future__ import annotations

import struct
import time

import requests


def log_lines(api, count: int = 1, timeout: float = 20) -> list[str]:
    """The API's log lines once it has said ``count`` times that it serves."""
    deadline = time.monotonic() + timeout
    while True:
        lines = (api.folder / "api.log").read_text().splitlines()
        if sum("murano-api serves" in line for line in lines) >= count:
            return lines
        assert time.monotonic() < deadline, lines
        time.sleep(0.1)


def test_the_start_log_names_only_the_migrations_it_runs(start_api, tmp_path):
    database = f"sqlite:///{tmp_path}/shared.sqlite"
    first = start_api(database=database)
    migrations = [line.split(": ", 1)[1] for line in log_lines(first) if "alembic" in line]
    assert migrations and all(m.startswith("Running upgrade ") for m in migrations), \
        migrations
    first.stop()
    again = start_api(database=database)  # the schema is up to date: nothing to tell
    assert [line for line in log_lines(again) if "alembic" in line] == []


def test_the_favicon_is_served_without_a_login(start_api):
    api = start_api()
    icon = requests.get(api.url + "/favicon.ico", timeout=30)
    assert icon.status_code == 200 and icon.headers["Content-Type"] == "image/x-icon"
    assert icon.headers["X-Content-Type-Options"] == "nosniff"
    reserved, kind, count = struct.unpack("<HHH", icon.content[:6])
    assert (reserved, kind, count) == (0, 1, 1)  # an ICO file of one image
    width, height, _, _, _, _, size, offset = struct.unpack("<BBBBHHII", icon.content[6:22])
    image = icon.content[offset:offset + size]
    assert (width, height, len(icon.content)) == (32, 32, offset + size)
    assert image.startswith(b"\x89PNG\r\n\x1a\n")
    assert struct.unpack(">II", image[16:24]) == (32, 32)  # the PNG's own size
    head = requests.head(api.url + "/favicon.ico", timeout=30)
    assert head.status_code == 200 and head.content == b""
    # the API's other paths are as they were
    assert requests.get(api.url + "/favicon.png", timeout=30).status_code == 404
    assert requests.post(api.url + "/favicon.ico", timeout=30).status_code in (404, 405)
