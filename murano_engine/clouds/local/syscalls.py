"""The system calls the local cloud needs that Python 3.11's ``os`` lacks: ``setns``
and ``umount2``, through the C library (each raises OSError with errno)."""

from __future__ import annotations

import ctypes
import functools
import os

CLONE_NEWNET = 0x40000000
#: umount2: detach now, let the mount go when its last user does
MNT_DETACH = 2


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)  # the C library this process has (no ldconfig run)


def setns(fd: int, kind: int) -> None:
    """The calling thread into the namespace open as ``fd`` (``kind``: CLONE_NEW*)."""
    if _libc().setns(fd, kind) != 0:
        raise _error()


def umount(path: str, flags: int = 0) -> None:
    """Unmount ``path`` (``flags``: 0 or MNT_DETACH)."""
    if _libc().umount2(os.fsencode(path), flags) != 0:
        raise _error(path)


def _error(path: str | None = None) -> OSError:
    errno = ctypes.get_errno()
    return OSError(errno, os.strerror(errno), path)
