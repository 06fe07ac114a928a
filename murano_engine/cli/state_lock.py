"""One command at a time on a state file: ``<state>.lock``, holding the holder's pid.

A second ``deploy``, ``destroy`` or ``action`` on a state file another process
holds is refused at once, naming that process, instead of running beside it
(two runs on one environment would each make servers, and the state file
would keep one run's). The lock is an ``flock`` on the file, so a killed
holder releases it; the holder removes the file when it ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from murano_common.files import lock_holder

#: Seconds a refused command waits for the holder to write its pid (it writes it
#: right after taking the lock).
_PID_WAIT = 0.5


class StateBusy(Exception):
    """Another process holds the state file."""

    def __init__(self, state_path: Path, pid: str) -> None:
        super().__init__(
            f"{state_path} is in use by another murano-engine command (pid {pid}); wait "
            f"for it to end, or stop it (Ctrl-C there, or kill -INT {pid}) and run this "
            "command again")
        self.pid = pid


def lock_path(state_path: Path) -> Path:
    """The lock file of ``state_path``."""
    return state_path.with_name(state_path.name + ".lock")


@contextlib.contextmanager
def holding(state_path: Path) -> Iterator[None]:
    """Hold ``state_path`` for this process; :class:`StateBusy` when another one does."""
    path = lock_path(state_path)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = lock_holder(fd, _PID_WAIT)
            os.close(fd)
            raise StateBusy(state_path, pid) from None
        if _is_current(fd, path):
            break
        os.close(fd)  # its holder removed it as we opened it: take the new file
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)  # still held: nobody can take the removed file
        os.close(fd)


def _is_current(fd: int, path: Path) -> bool:
    """Whether ``fd`` is still the file at ``path`` (not one a holder removed)."""
    try:
        now = path.stat()
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)
