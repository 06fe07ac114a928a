"""A control group per sandboxed server: its memory, process count and CPU, sized by its flavor.

Each server gets ``murano-sandboxes/<server id>`` in the host's cgroup v2
hierarchy when that has the ``memory``, ``pids`` and ``cpu`` controllers, or
else in each of the v1 hierarchies of those controllers. Limits: memory (and
swap) at the flavor's RAM, so going past it ends in an out-of-memory kill
inside the server; at most ``max_processes`` processes, so a fork past it
fails with EAGAIN; a CPU quota of ``vcpus`` CPUs and a share in proportion.
The sandbox's first process is in the group before it runs anything, so all
the server's processes are; the group goes with the server.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from murano_engine.clouds.local.flavors import Flavor

LOG = logging.getLogger(__name__)

CONTROLLERS = ("memory", "pids", "cpu")
PARENT = "murano-sandboxes"
DEFAULT_MAX_PROCESSES = 512
CPU_PERIOD_US = 100_000
KILL_WAIT = 3.0
MOUNTINFO = Path("/proc/self/mountinfo")


@dataclass(frozen=True)
class Hierarchies:
    """Where the controllers are mounted: one v2 root, or a v1 root per controller."""

    version: int
    roots: dict[str, Path]


def find_hierarchies(mountinfo: str) -> tuple[Hierarchies | None, list[str]]:
    """The writable hierarchies ``mountinfo`` (``/proc/self/mountinfo``'s text) shows, or
    None and what is missing."""
    v1: dict[str, Path] = {}
    v2: Path | None = None
    for line in mountinfo.splitlines():
        mine, _, theirs = line.partition(" - ")
        fields, super_fields = mine.split(), theirs.split()
        if len(fields) < 6 or len(super_fields) < 3 or "rw" not in fields[5].split(","):
            continue
        point = Path(fields[4].replace("\\040", " "))
        if super_fields[0] == "cgroup2" and v2 is None:
            v2 = point
        elif super_fields[0] == "cgroup":
            for name in set(super_fields[2].split(",")) & set(CONTROLLERS):
                v1.setdefault(name, point)
    if v2 is not None:
        try:
            available = set((v2 / "cgroup.controllers").read_text().split())
        except OSError:
            available = set()
        if available >= set(CONTROLLERS):
            return Hierarchies(2, {name: v2 for name in CONTROLLERS}), []
    lacking = [name for name in CONTROLLERS if name not in v1]
    if not lacking:
        return Hierarchies(1, v1), []
    return None, [f"a writable cgroup hierarchy with the {', '.join(lacking)} controller"
                  f"{'s' if len(lacking) > 1 else ''} (cgroup v2, or v1 mounted rw)"]


def host_hierarchies() -> tuple[Hierarchies | None, list[str]]:
    """This host's hierarchies (see :func:`find_hierarchies`)."""
    return find_hierarchies(MOUNTINFO.read_text())


class ServerGroup:
    """The control group(s) of one server."""

    def __init__(self, hierarchies: Hierarchies, server_id: str) -> None:
        self.hierarchies = hierarchies
        self.paths = sorted({root / PARENT / server_id
                             for root in hierarchies.roots.values()})

    def controller_path(self, controller: str) -> Path:
        """The group's folder in the hierarchy of ``controller``."""
        return self.hierarchies.roots[controller] / PARENT / self.paths[0].name

    def create(self, flavor: Flavor, max_processes: int) -> None:
        """Make the group(s) and set the flavor's limits (again, when they exist)."""
        memory = flavor.ram_mib * 1024 * 1024
        if self.hierarchies.version == 2:
            root = self.hierarchies.roots["memory"]
            enable = " ".join(f"+{name}" for name in CONTROLLERS)
            for parent in (root, root / PARENT):
                parent.mkdir(exist_ok=True)
                (parent / "cgroup.subtree_control").write_text(enable)
            path = self.paths[0]
            path.mkdir(exist_ok=True)
            _write(path / "memory.max", memory)
            _write(path / "memory.swap.max", 0, optional=True)
            _write(path / "pids.max", max_processes)
            _write(path / "cpu.max", f"{flavor.vcpus * CPU_PERIOD_US} {CPU_PERIOD_US}")
            _write(path / "cpu.weight", min(100 * flavor.vcpus, 10_000))
            return
        for path in self.paths:
            path.mkdir(parents=True, exist_ok=True)
        memory_path = self.controller_path("memory")
        limits = [memory_path / "memory.limit_in_bytes",
                  memory_path / "memory.memsw.limit_in_bytes"]  # never below the first
        if memory > int(limits[0].read_text()):
            limits.reverse()
        for limit in limits:
            _write(limit, memory, optional=limit.name.startswith("memory.memsw"))
        _write(self.controller_path("pids") / "pids.max", max_processes)
        cpu = self.controller_path("cpu")
        _write(cpu / "cpu.cfs_period_us", CPU_PERIOD_US)
        _write(cpu / "cpu.cfs_quota_us", flavor.vcpus * CPU_PERIOD_US)
        _write(cpu / "cpu.shares", 1024 * flavor.vcpus)

    def pids(self) -> list[int]:
        """The processes in the group (none when it does not exist)."""
        found: set[int] = set()
        for path in self.paths:
            try:
                found.update(int(p) for p in (path / "cgroup.procs").read_text().split())
            except OSError:
                continue
        return sorted(found)

    def oom_kills(self) -> int:
        """How many of the group's processes the kernel killed for want of memory (0 when
        the group does not exist, or its kernel does not count them)."""
        memory = self.controller_path("memory")
        for name in ("memory.events", "memory.oom_control"):  # v2, v1
            try:
                lines = (memory / name).read_text().splitlines()
            except OSError:
                continue
            counts = dict(line.split(maxsplit=1) for line in lines if " " in line)
            try:
                return int(counts.get("oom_kill", 0))
            except ValueError:
                return 0
        return 0

    def remove(self) -> None:
        """Kill whatever is in the group, then remove it; a process that joins meanwhile
        (a sandbox still starting) is killed too. OSError names the groups that are still
        there after :data:`KILL_WAIT` seconds."""
        deadline = time.monotonic() + KILL_WAIT
        left = list(self.paths)
        while True:
            for pid in self.pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            left = [path for path in left if not _removed(path)]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.02)  # the killed processes may still be leaving
        if left:
            raise OSError(errno.EBUSY, "processes are still in the control group "
                          + ", ".join(str(path) for path in left))


def _removed(path: Path) -> bool:
    """Remove an empty group folder: False while processes are still in it."""
    try:
        path.rmdir()
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def _write(path: Path, value: object, optional: bool = False) -> None:
    try:
        path.write_text(str(value))
    except FileNotFoundError:
        if not optional:
            raise
