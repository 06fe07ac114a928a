"""Reading a whole file in as few system calls as the kernel allows.

``open(path, "rb").read()`` makes eight or nine (it asks whether the file is a
terminal, seeks to learn its position, stats it twice); loading a package set
reads two files a class (the class file and its cache entry), and on a virtual
machine each call is a microsecond or more.
"""

from __future__ import annotations

import os

_FLAGS = os.O_RDONLY | os.O_CLOEXEC


def read_bytes(path: str) -> bytes:
    """The bytes of the file at ``path``: open, stat, read, close (and a read more for a
    file that grew meanwhile). Raises OSError as ``open()`` would (a folder included)."""
    fd = os.open(path, _FLAGS)
    try:
        size = os.fstat(fd).st_size
        data = os.read(fd, size + 1)  # one byte over: a short read is the end
        if len(data) <= size:
            return data
        chunks = [data]
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
