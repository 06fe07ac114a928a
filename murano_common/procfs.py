"""Processes as Linux's /proc shows them: a pid and the start time that tells the
process from a later one given the same pid.

The engine (its local cloud's sandboxes and agents) and the guest agent (its
detached script calls) both keep a process by pid and start time, and both ask
whether that process, not merely that pid, still runs.
"""

from __future__ import annotations

import os


def stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks after boot) of process ``pid`` (None when there
    is no such process, or no /proc)."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:  # one read: /proc makes the whole text for each read call
        text = os.read(fd, 4096)
    except ProcessLookupError:  # it ended (and was collected) after the open
        return None
    finally:
        os.close(fd)
    fields = text.rpartition(b")")[2].split()
    return fields[0].decode(), int(fields[19])


def start_ticks(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot), or None where unknown."""
    found = stat(pid)
    return found[1] if found else None


def running(pid: int, ticks: int | None = None) -> bool:
    """Whether process ``pid`` has not ended (a zombie has) and, with ``ticks``, is the
    one that started then."""
    found = stat(pid)
    return found is not None and found[0] != "Z" and (ticks is None or found[1] == ticks)
