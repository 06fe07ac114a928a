"""Script commands that outlive the agent, so that an agent restarted after a crash
finds each one again instead of starting it twice.

A command has run files of its own, named ``<prefix>.<kind>``: ``out`` and ``err``
receive its output, ``in`` holds its input (when it has one) and ``exit`` its exit
code once it ended (``"<code>\\n"``, one write; an empty or partial file, left by a
crash, holds no code). They are plain files side by side, not a folder per command:
making and removing a folder costs several times what a file does on a journaling
file system. On POSIX a small shell wrapper runs the command: the wrapper leads a
new session (its pid is the process group id), waits for the agent's go-ahead on
its stdin, runs the command and writes ``exit``. The agent journals the wrapper's
pid and start time before giving the go-ahead, so no command runs that the journal
does not know of; if the agent dies first, the wrapper reads end-of-file, writes
``NOT_STARTED`` to ``exit`` and exits without running it, so a restarted agent
knows that command never began (:func:`never_started`) and may run it.

Windows has no POSIX shell: there the agent journals the call before starting the
command and writes ``exit`` itself; a call its dead agent left is never waited for
and counts as interrupted unless ``exit`` was written.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from murano_agent.process import Completed, exited_within, kill_tree, read_output
from murano_common import procfs

#: Journals a call before its command may begin: (process group id, leader's start time).
Journal = Callable[[int | None, int | None], None]

#: What the wrapper writes to ``exit`` when its agent died before the go-ahead.
NOT_STARTED = b"no go-ahead\n"
#: $1 exit code file, $2 input file, then the command. Exit 125: the agent died before
#: the go-ahead (the command never began). Where the kernel has it (Linux), the command's
#: ``oom_score_adj`` is 500: a server out of memory kills a plan's processes before its
#: agent and init (0), which a guest cannot lower again.
WRAPPER = """IFS= read -r go || { printf 'no go-ahead\\n' >"$1"; exit 125; }
{ echo 500 >/proc/self/oom_score_adj; } 2>/dev/null
exit_file=$1 input=$2
shift 2
"$@" <"$input"
code=$?
printf '%d\\n' "$code" >"$exit_file"
exit "$code"
"""

#: The run files of one command.
KINDS = ("out", "err", "in", "exit")

_EXIT = re.compile(rb"(\d+)\n")
_POSIX = sys.platform != "win32"


@functools.cache
def boot_id() -> str | None:
    """This boot's id (Linux), telling a start time of this boot from one of an earlier."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def run_file(prefix: Path, kind: str) -> Path:
    """The run file of one ``kind`` (see :data:`KINDS`) of the command with ``prefix``."""
    return prefix.with_name(f"{prefix.name}.{kind}")


def read_exit(prefix: Path) -> int | None:
    """The exit code the wrapper wrote, or None."""
    try:
        match = _EXIT.fullmatch(run_file(prefix, "exit").read_bytes())
    except OSError:
        return None
    return int(match[1]) if match else None


def never_started(prefix: Path) -> bool:
    """Whether the wrapper ended without running its command: its agent died before
    giving the go-ahead."""
    try:
        return run_file(prefix, "exit").read_bytes() == NOT_STARTED
    except OSError:
        return False


def _output(prefix: Path, kind: str) -> str:
    try:
        return run_file(prefix, kind).read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _found(prefix: Path, code: int | None, timed_out: bool = False) -> Completed:
    """The outcome read back from run files (no code and no timeout: interrupted)."""
    interrupted = code is None and not timed_out
    return Completed(code, _output(prefix, "out"), _output(prefix, "err"), timed_out, interrupted)


class Launched:
    """A command this agent started with run files."""

    def __init__(self, proc: subprocess.Popen[bytes], prefix: Path, out: IO[bytes], err: IO[bytes]):
        self._proc = proc
        self._prefix = prefix
        self._out = out
        self._err = err
        self.recorded = False  # whether the run files hold the outcome wait() returned

    def wait(self, timeout: float) -> Completed:
        """Wait for the command; after ``timeout`` s its process group is killed."""
        with self._out, self._err:
            ended = exited_within(self._proc, max(timeout, 0.001))
            if not ended:
                kill_tree(self._proc)
            stdout, stderr = read_output(self._out), read_output(self._err)
        code = self._proc.returncode
        if not ended:
            return Completed(None, stdout, stderr, True)
        if code < 0:  # the wrapper itself was killed: reported as the shell reports a signal
            return Completed(128 - code, stdout, stderr, False)
        if not _POSIX:
            run_file(self._prefix, "exit").write_text(f"{code}\n", encoding="ascii")
        self.recorded = True
        return Completed(code, stdout, stderr, False)


def start(
    command: list[str] | str, cwd: Path, prefix: Path, input: str | None, journal: Journal
) -> Launched:
    """Start ``command`` (argv, or a shell line when a str) in ``cwd`` with the run files
    ``prefix.*`` (in an existing folder); ``journal`` is called before the command may
    begin."""
    input_path = os.devnull
    if input is not None:
        input_path = str(run_file(prefix, "in"))
        Path(input_path).write_text(input, encoding="utf-8")
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(open(run_file(prefix, "out"), "w+b"))  # noqa: SIM115 - kept
        err = stack.enter_context(open(run_file(prefix, "err"), "w+b"))  # noqa: SIM115
        exit_path = str(run_file(prefix, "exit"))
        with contextlib.suppress(FileNotFoundError):  # an earlier attempt's, never begun
            os.unlink(exit_path)
        if _POSIX:
            proc = _start_posix(command, cwd, exit_path, input_path, out, err, journal)
        else:
            proc = _start_windows(command, cwd, input_path, out, err, journal)
        stack.pop_all()
    return Launched(proc, prefix, out, err)


def _start_posix(
    command: list[str] | str,
    cwd: Path,
    exit_path: str,
    input_path: str,
    out: IO[bytes],
    err: IO[bytes],
    journal: Journal,
) -> subprocess.Popen[bytes]:
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else command
    gate_read, gate = os.pipe()
    try:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", WRAPPER, "murano-agent-call", exit_path, input_path, *argv],
            cwd=cwd,
            stdin=gate_read,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
    except BaseException:
        os.close(gate)
        raise
    finally:
        os.close(gate_read)
    go = False
    try:
        journal(proc.pid, procfs.start_ticks(proc.pid))
        os.write(gate, b"go\n")
        go = True
    finally:
        os.close(gate)
        if not go:
            proc.wait()
    return proc


def _start_windows(
    command: list[str] | str,
    cwd: Path,
    input_path: str,
    out: IO[bytes],
    err: IO[bytes],
    journal: Journal,
) -> subprocess.Popen[bytes]:
    journal(None, None)
    with open(input_path, "rb") as stdin:
        return subprocess.Popen(
            command,
            cwd=cwd,
            shell=isinstance(command, str),
            stdin=stdin,
            stdout=out,
            stderr=err,
            creationflags=subprocess.CREATE_NEW_PROCESS_GROUP,
        )


def _ended_within(pid: int, ticks: int, timeout: float) -> bool:
    """Wait up to ``timeout`` s for process ``pid`` (started at ``ticks``; not our child)
    to end; True once it has ended (or is another process by now)."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        deadline = time.monotonic() + timeout
        while procfs.running(pid, ticks):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True
    try:
        fd = pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:  # checked after opening: the descriptor then names the process checked
        return not procfs.running(pid, ticks) or bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def _end_group_left(pgid: int, ticks: int) -> None:
    """Kill what is left of the process group whose leader (started at ``ticks``) ended.

    A process group id stays taken while any member lives, so when no other process
    has taken the leader's pid, whatever still has this group id is what it left.
    """
    stat = procfs.stat(pgid)
    if stat is not None and stat[1] != ticks:
        return  # the pid names another process: the group is gone
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def recover(
    prefix: Path, pgid: int | None, ticks: int | None, boot: str | None, timeout: float
) -> Completed:
    """The outcome of a call whose agent died while it ran.

    From its ``exit`` file when it ended; if its wrapper still runs, once it ends
    (after ``timeout`` s its process group is killed: a timeout); if it ended
    without an exit code (killed, or the machine went down), what its group left
    is killed and the call counts as interrupted.
    """
    code = read_exit(prefix)
    this_boot = boot is not None and boot == boot_id()
    if code is None and this_boot and pgid is not None and ticks is not None:
        if not _ended_within(pgid, ticks, max(timeout, 0.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            return _found(prefix, None, timed_out=True)
        code = read_exit(prefix)
        if code is None:
            _end_group_left(pgid, ticks)
    return _found(prefix, code)
