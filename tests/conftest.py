"""Shared pytest settings."""

import os
import signal
import sys
from pathlib import Path

import pytest

from tests import processes

# As the CLI does: MuranoPL's own call-depth limit (2,000) must be reached
# before Python's recursion limit.
sys.setrecursionlimit(100_000)


def _sandboxes(folder: Path) -> set[str]:
    """The local cloud's server namespaces (``ms-``) on this host whose sandboxes live
    under ``folder`` (other test runs on the machine have their own)."""
    root = Path("/run/netns")
    if not root.is_dir():
        return set()
    mine = set()
    for entry in root.iterdir():
        if entry.name.startswith("ms-") and any(
                str(folder).encode() in processes.cmdline(pid) for pid in _pids(entry.name)):
            mine.add(entry.name)
    return mine


def _pids(namespace: str) -> list[int]:
    from murano_engine.clouds.local import netns
    return netns.pids(namespace)


@pytest.fixture(autouse=True)
def no_sandbox_left_behind(tmp_path_factory):
    """Local-cloud servers outlive the engine: a test must delete those it made."""
    folder = tmp_path_factory.getbasetemp()
    before = _sandboxes(folder)
    yield
    left = _sandboxes(folder) - before
    if left:
        from murano_engine.clouds.local import netns
        for name in left:  # clean up, so one leak fails one test
            for pid in netns.pids(name):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            netns.delete(name)
        pytest.fail(f"the test left local-cloud servers running: {sorted(left)}")
