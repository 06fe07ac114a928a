"""Reading a whole file in as few system calls as the kernel allows.

``open(path, "rb").read()`` makes eight or nine (it asks whether the file is a
terminal, seeks to learn its position, stats it twice); this makes three for a
file under 64 KiB. Loading a package set reads two files a class (the class file
and its cache entry), and on a virtual machine each call is a microsecond or more.
"""

from __future__ import annotations

import os

_FLAGS = os.O_RDONLY | os.O_CLOEXEC
_CHUNK = 1 << 16


def read_bytes(path: str, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of the file at ``path``: open, read, close (and more reads for a file
    over 64 KiB). Raises OSError as ``open()`` would (a folder included); without
    ``follow_symlinks``, a symlink raises OSError with errno ELOOP."""
    fd = os.open(path, _FLAGS if follow_symlinks else _FLAGS | os.O_NOFOLLOW)
    try:
        data = os.read(fd, _CHUNK)
        if len(data) < _CHUNK:  # a short read of a file is its end
            return data
        chunks = [data]
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
