"""Files the engine and agent share ways of writing: whole, and lock files naming their
holder."""

from __future__ import annotations

import errno
import os
import time
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


def replace_whole(path: Path, data: bytes, temporary: Path) -> None:
    """Make ``data`` the whole of ``path`` durably: written to ``temporary`` (mode 0600),
    synced, then renamed over ``path``. On any failure ``path`` is as it was and
    ``temporary`` is gone."""
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        write_all(fd, data, temporary)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        temporary.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(temporary, path)


def lock_holder(fd: int, wait: float = 0.5) -> str:
    """The pid a lock file's holder writes into it right after taking the lock (waited
    for up to ``wait`` seconds; "unknown" if none came)."""
    deadline = time.monotonic() + wait
    while True:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        if text or time.monotonic() > deadline:
            return text or "unknown"
        time.sleep(0.01)
