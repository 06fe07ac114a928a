"""``python -m murano_agent.forkserver``: agents started by forking, not by a new Python.

A fresh agent process spends most of its start importing (kombu, jsonschema,
cryptography: about a quarter of a second of CPU). This process imports them
once, then for each request forks a child that calls ``main(args, start_agent,
name_process)``
of a *setup script* (a Python file named in the request: the local cloud's
sandbox entry); the script prepares the process (namespaces, limits, user)
and calls ``start_agent(argv)`` for each agent it runs, which forks again and
runs ``murano-agent`` with ``argv`` in the child, its modules already
imported.

Requests are JSON lines on standard input, answered on standard output:
``{"script": PATH, "args": ANY, "env": {...}, "output": PATH}`` with
``{"pid": N}`` (or ``{"error": "..."}``). The child's standard output and error
go to ``output`` (appended), its standard input is ``/dev/null``, its
environment is ``env``; it leads a session of its own. The server ends at the
end of its input; the children live on. It holds no secret: nothing but
modules is in its memory when it forks.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import random
import runpy
import select
import signal
import sys
import traceback
from typing import Any

import murano_agent.cli

#: the name (``comm``: ``ps -e``, ``/proc/PID/status``) of the agents it starts
AGENT_NAME = b"murano-agent"
PR_SET_NAME = 15
_LIBC = ctypes.CDLL(None)


def name_process(name: bytes) -> None:
    """Give this process ``name`` (at most 15 bytes): forks keep their parent's command
    line, which names this server, not what they are."""
    _LIBC.prctl(PR_SET_NAME, ctypes.c_char_p(name[:15]), 0, 0, 0)


def start_agent(argv: list[str]) -> int:
    """Fork an agent with ``argv`` (``murano-agent``'s arguments); its pid."""
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            name_process(AGENT_NAME)
            for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
                signal.signal(number, signal.SIG_DFL)  # not its parent's handlers
            signal.signal(signal.SIGINT, signal.default_int_handler)
            random.seed()  # not the server's sequence, shared by every fork
            sys.argv = ["murano-agent", *argv]  # as if started by its command
            code = murano_agent.cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - the child must never return here
            traceback.print_exc()
        finally:
            _flush_and_exit(code)
    return pid


def _child(request: dict[str, Any]) -> None:
    """In the forked child: standard streams, session, environment, then the script."""
    null = os.open(os.devnull, os.O_RDONLY)
    # (never through a link: the engine names a file out of any guest's reach, and a
    # link there would be someone's attempt to make root write elsewhere; readable too,
    # for a setup script that keeps the file's size bounded)
    output = os.open(request["output"],
                     os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    os.dup2(null, 0)
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    os.setsid()
    os.environ.clear()
    os.environ.update(request["env"])
    script = runpy.run_path(request["script"], run_name="__forkserver__")
    script["main"](request["args"], start_agent, name_process)


def _serve_one(line: bytes) -> dict[str, Any]:
    try:
        request = json.loads(line)
        if not (isinstance(request.get("script"), str) and isinstance(request.get("env"), dict)
                and isinstance(request.get("output"), str) and "args" in request):
            raise TypeError("script and output are paths, env a map")
    except (ValueError, AttributeError, TypeError) as exc:
        return {"error": f"a request must be {{script, args, env, output}}: {exc}"}
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _child(request)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # noqa: BLE001 - the child must never return here
            print(f"murano-agent forkserver: {request['script']}: {exc!r}", file=sys.stderr)
        finally:
            _flush_and_exit(code)
    return {"pid": pid}


def _flush_and_exit(code: int) -> None:
    """End a forked child: what it printed is written first (``os._exit`` would drop it)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _reap() -> None:
    """Collect the children that ended (the processes the scripts made wait for theirs)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main() -> int:
    gc.collect()
    gc.freeze()  # the imported modules' objects stay shared with the children
    pending = b""
    while True:
        ready, _, _ = select.select([0], [], [], 1.0)
        _reap()
        if not ready:
            continue
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return 0
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            os.write(1, json.dumps(_serve_one(line)).encode() + b"\n")


if __name__ == "__main__":
    sys.exit(main())
