"""The host's processes as the tests look at them: command lines read from ``/proc``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

#: How an agent the engine started as a process of its own begins its command line.
AGENT_COMMAND = sys.executable.encode() + b"\0-S\0-m\0murano_agent.cli\0"


def cmdline(pid: int) -> bytes:
    """The process's arguments, NUL-separated; empty once it has ended."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def command_lines() -> Iterator[tuple[int, bytes]]:
    """Every running process and its command line."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            yield int(entry.name), cmdline(int(entry.name))


def name(pid: int) -> bytes:
    """The process's name (``comm``); empty once it has ended."""
    try:
        return Path(f"/proc/{pid}/comm").read_bytes().rstrip(b"\n")
    except OSError:
        return b""


def is_agent(pid: int) -> bool:
    """An agent process: a sandbox's (forked, named ``murano-agent``) or a plain one."""
    return name(pid) == b"murano-agent" or cmdline(pid).startswith(AGENT_COMMAND)
