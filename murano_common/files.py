"""Writing files whole: a write may take only part of what it is given."""

from __future__ import annotations

import errno
import os
from pathlib import Path


def write_all(fd: int, data: bytes, path: Path | str) -> None:
    """Write all of ``data`` to ``fd`` (the file ``path``), or raise OSError naming the
    file and how much of it was written (a full disk takes part of a write silently)."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
            if written <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        except OSError as exc:
            raise OSError(exc.errno, f"only {len(data) - len(view)} of {len(data)} bytes "
                                     f"were written ({exc.strerror})", str(path)) from None
        view = view[written:]
