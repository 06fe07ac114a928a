"""Zips for tests of damaged packages."""

from __future__ import annotations

import io
import zipfile


def damaged(data: bytes, name: str) -> bytes:
    """The zip ``data`` with the first 8 bytes of member ``name``'s data overwritten (its
    deflate stream broken, or its CRC wrong when stored); the directory stays whole."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        member = archive.getinfo(name)
    start = member.header_offset + 30 + len(member.filename.encode())  # no extra field
    changed = bytearray(data)
    changed[start:start + 8] = b"\xff" * 8
    return bytes(changed)
