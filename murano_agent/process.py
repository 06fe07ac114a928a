"""Running one external command with captured output and a time limit."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO


@dataclasses.dataclass(frozen=True)
class Completed:
    """What a finished (or killed) command left: exit code, output, whether it timed out
    or was interrupted (its agent died and nothing tells how it ended)."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    interrupted: bool = False


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    if sys.platform == "win32":
        subprocess.run(["taskkill", "/F", "/T", "/PID", str(proc.pid)], capture_output=True)
    else:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def exited_within(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait up to ``timeout`` s for ``proc`` to exit and reap it.

    On Linux a pidfd wakes us the moment it exits; elsewhere Popen's polling wait.
    """
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is not None:
        fd = pidfd_open(proc.pid)
        try:
            if not select.select([fd], [], [], timeout)[0]:
                return False
        finally:
            os.close(fd)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def _capture_file() -> IO[bytes]:
    """A file for a command's output: in memory on Linux (a memfd: no disk work), else
    an unnamed temporary file. Each run gets fresh ones, so whatever a command leaves
    running in the background never writes into a later command's output."""
    if hasattr(os, "memfd_create"):
        return open(os.memfd_create("murano-agent-output", os.MFD_CLOEXEC), "w+b")
    return tempfile.TemporaryFile()


#: the most of a command's standard output (and of its error output) a result carries:
#: its end, past a line saying how much of its start was cut (the engine takes results
#: of up to 16 MiB; a verbose install log must not make the whole plan's unreadable)
OUTPUT_LIMIT = 4 << 20


def read_output(stream: IO[bytes]) -> str:
    size = stream.seek(0, os.SEEK_END)
    cut = max(0, size - OUTPUT_LIMIT)
    stream.seek(cut)
    text = stream.read().decode("utf-8", errors="replace")
    if not cut:
        return text
    return f"[the first {cut} bytes of this output were cut: its last {OUTPUT_LIMIT} follow]\n" \
        + text


def run(
    command: list[str] | str, cwd: Path, timeout: float, stdin_text: str | None = None
) -> Completed:
    """Run ``command`` (argv, or a shell line when a str) in ``cwd``.

    Output goes to files (no pipes to fill up, nothing to poll); after
    ``timeout`` seconds the command and everything it started is killed.
    """
    group = (
        {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
        if sys.platform == "win32"
        else {"start_new_session": True}
    )
    with contextlib.ExitStack() as files:
        out = files.enter_context(_capture_file())
        err = files.enter_context(_capture_file())
        stdin: IO[bytes] | int = subprocess.DEVNULL
        if stdin_text is not None:
            stdin = files.enter_context(tempfile.TemporaryFile())
            stdin.write(stdin_text.encode("utf-8"))
            stdin.seek(0)
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            shell=isinstance(command, str),
            stdin=stdin,
            stdout=out,
            stderr=err,
            **group,
        )
        if exited_within(proc, max(timeout, 0.001)):
            return Completed(proc.returncode, read_output(out), read_output(err), False)
        kill_tree(proc)
        return Completed(None, read_output(out), read_output(err), True)
