"""Shared pytest settings."""

import os
import signal
import sys
from pathlib import Path

import pytest

# As the CLI does: MuranoPL's own call-depth limit (2,000) must be reached
# before Python's recursion limit.
sys.setrecursionlimit(100_000)


def _sandboxes() -> set[str]:
    """The local cloud's server (``ms-``) and network (``mn-``) namespaces on this host."""
    root = Path("/run/netns")
    if not root.is_dir():
        return set()
    return {p.name for p in root.iterdir() if p.name.startswith(("ms-", "mn-"))}


@pytest.fixture(autouse=True)
def no_sandbox_left_behind():
    """Local-cloud servers outlive the engine: a test must delete those it made."""
    before = _sandboxes()
    yield
    left = _sandboxes() - before
    if left:
        from murano_engine.clouds.local import netns
        for name in sorted(left, reverse=True):  # servers first; one leak fails one test
            for pid in netns.pids(name):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            netns.delete(name)
        pytest.fail(f"the test left local-cloud servers running: {sorted(left)}")
