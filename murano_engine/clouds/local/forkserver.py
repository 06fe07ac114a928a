"""The engine's side of ``python -m murano_agent.forkserver``: sandboxes made by forking.

One server process per launcher, started on first use with the agent's
``PYTHONPATH``: it has the agent's modules imported, so a sandbox's first
process and its agents are forks of it, not new Pythons (each of which spent a
quarter of a second importing). It is started again when it has died. The
sandboxes it made outlive it, as they outlive the engine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any


class ForkServerError(OSError):
    """The fork server could not be started or refused a request."""


class ForkServer:
    def __init__(self, environment: Callable[[], dict[str, str]]) -> None:
        #: the server's environment, built when it is first started
        self._environment = environment
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def start(self, script: Path, args: Any, env: dict[str, str], output: Path) -> int:
        """Fork a process that runs ``script`` with ``args`` (see the server's module),
        its output appended to ``output``; its pid."""
        line = json.dumps({"script": str(script), "args": args, "env": env,
                           "output": str(output)}).encode() + b"\n"
        with self._lock:
            for attempt in (1, 2):  # a server found dead is started again, once
                process = self._running()
                try:
                    assert process.stdin is not None and process.stdout is not None
                    process.stdin.write(line)
                    process.stdin.flush()
                    answer = process.stdout.readline()
                except OSError:
                    answer = b""
                if answer:
                    break
                self._stop()
                if attempt == 2:
                    raise ForkServerError("the agent's fork server ended without answering")
        found = json.loads(answer)
        if "pid" not in found:
            raise ForkServerError(f"the agent's fork server refused: {found.get('error')}")
        return int(found["pid"])

    def _running(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-S", "-m", "murano_agent.forkserver"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True,
                env=self._environment())
        return self._process

    def _stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None

    def close(self) -> None:
        """End the server (its input closes; what it made lives on)."""
        with self._lock:
            if self._process is not None:
                assert self._process.stdin is not None
                self._process.stdin.close()
                self._process.wait()
                self._process = None
