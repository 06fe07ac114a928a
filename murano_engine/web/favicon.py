"""``/favicon.ico``: the pages' icon, an "M" on the header's colour, drawn here.

Browsers ask for ``/favicon.ico`` on every site they open, outside ``/ui/`` and
before any login; :func:`serving` answers it in front of the API (which would
answer a 404 in JSON). The icon is a 32x32 PNG in an ICO container, made once.
"""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Callable, Iterable

PATH = "/favicon.ico"
SIZE = 32
BACKGROUND = (0x2C, 0x3E, 0x57)  # the header's colour (murano.css)
#: the letter: 5 columns by 7 rows of CELL px squares, its top left corner at ORIGIN
LETTER = ("#...#", "##.##", "#.#.#", "#...#", "#...#", "#...#", "#...#")
CELL = 4
ORIGIN = (6, 2)  # (32 - 5 * 4) / 2 and (32 - 7 * 4) / 2: in the middle


def _pixel(x: int, y: int) -> tuple[int, int, int, int]:
    """The colour of pixel (x, y): a rounded square, white where the letter is."""
    corner = 5
    dx = max(corner - x, x - (SIZE - 1 - corner), 0)
    dy = max(corner - y, y - (SIZE - 1 - corner), 0)
    if dx * dx + dy * dy > corner * corner:
        return (0, 0, 0, 0)
    column, row = (x - ORIGIN[0]) // CELL, (y - ORIGIN[1]) // CELL
    inside = x >= ORIGIN[0] and y >= ORIGIN[1] and 0 <= row < len(LETTER) \
        and 0 <= column < len(LETTER[0])
    if inside and LETTER[row][column] == "#":
        return (255, 255, 255, 255)
    return (*BACKGROUND, 255)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(
        ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png() -> bytes:
    """The icon as a PNG (RGBA, 8 bits a channel)."""
    rows = b"".join(b"\x00" + bytes(v for x in range(SIZE) for v in _pixel(x, y))
                    for y in range(SIZE))
    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(rows, 9)) + _chunk(b"IEND", b""))


@functools.cache
def ico() -> bytes:
    """The icon as an ICO file holding the PNG (as browsers take it since IE 9)."""
    image = png()
    directory = struct.pack("<HHH", 0, 1, 1)
    entry = struct.pack("<BBBBHHII", SIZE, SIZE, 0, 0, 1, 32, len(image), 6 + 16)
    return directory + entry + image


def serving(app: Callable) -> Callable:
    """``app`` with ``GET /favicon.ico`` answered in front of it."""
    def with_icon(environ: dict, start_response: Callable) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != PATH or environ.get("REQUEST_METHOD") not in (
                "GET", "HEAD"):
            return app(environ, start_response)
        body = ico()
        start_response("200 OK", [
            ("Content-Type", "image/x-icon"), ("Content-Length", str(len(body))),
            ("Cache-Control", "public, max-age=86400"), ("X-Content-Type-Options", "nosniff")])
        return [b""] if environ["REQUEST_METHOD"] == "HEAD" else [body]
    return with_icon
