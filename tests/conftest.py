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


def _disks(folder: Path) -> set[str]:
    """Mount points of local-cloud server disks (:mod:`murano_engine.clouds.local.disk`)
    under ``folder``."""
    mounts = [line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return {fields[4] for fields in mounts
            if fields[4].startswith(f"{folder}/") and "/servers/" in fields[4]}


def _release_disks(points: set[str]) -> None:
    """Unmount leaked server disks and remove their servers' control groups."""
    from murano_engine.clouds.local.cgroups import ServerGroup, host_hierarchies
    from murano_engine.clouds.local.disk import ServerDisk
    hierarchies = host_hierarchies()[0]
    for point in points:
        if hierarchies is not None:
            ServerGroup(hierarchies, Path(point).name).remove()
        ServerDisk(Path(point)).delete()


def _pids(namespace: str) -> list[int]:
    from murano_engine.clouds.local import netns
    return netns.pids(namespace)


@pytest.fixture(autouse=True)
def no_sandbox_left_behind(tmp_path_factory):
    """Local-cloud servers outlive the engine: a test must delete those it made."""
    folder = tmp_path_factory.getbasetemp()
    before, disks_before = _sandboxes(folder), _disks(folder)
    yield
    left = _sandboxes(folder) - before
    leaked_disks = _disks(folder) - disks_before
    if left:
        from murano_engine.clouds.local import netns
        for name in left:  # clean up, so one leak fails one test
            for pid in netns.pids(name):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            netns.delete(name)
    _release_disks(leaked_disks)
    if left:
        pytest.fail(f"the test left local-cloud servers running: {sorted(left)}")
    if leaked_disks:
        pytest.fail(f"the test left local-cloud server disks mounted: {sorted(leaked_disks)}")


def _green() -> bool:
    """Whether eventlet has monkey-patched this process's threads."""
    patcher = sys.modules.get("eventlet.patcher")
    return patcher is not None and patcher.is_monkey_patched("thread")


@pytest.fixture(autouse=True)
def no_green_patching_of_the_test_process():
    """The deploy commands monkey-patch their process for green threads; run in the test
    process they would leave every later test green (locks made before the patch then
    deadlock green threads): such a test must run the command in a subprocess."""
    before = _green()
    yield
    if _green() and not before:
        pytest.fail("the test monkey-patched the test process with eventlet (run the "
                    "command in a subprocess)")
