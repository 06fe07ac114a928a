"""Sandboxes sized by their flavor: memory, processes and ``/sandbox`` end in the guest's own
failure, while another sandbox and the host keep working.

Every attack is bounded (a count of processes, a size of memory or file) and runs
inside a server's own control group; the tests check the limits from outside too.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from murano_engine.clouds.base import StackFailed, push_stack, remove_stack
from murano_engine.clouds.local import cgroups, netns
from murano_engine.clouds.local.cgroups import DEFAULT_MAX_PROCESSES, ServerGroup, find_hierarchies
from murano_engine.clouds.local.cloud import LocalCloud
from murano_engine.clouds.local.flavors import FLAVORS
from murano_engine.clouds.local.sandbox import (
    NamespaceLauncher,
    SandboxError,
    missing_for_namespaces,
)
from tests.clouds.test_sandboxes import NO_NAMESPACES, Region

MIB = 1024 * 1024
AMQP = "amqp://guest:guest@127.0.0.1:5672//"
#: forks up to 5,000 sleeping children, says how many and why it stopped, holds them 4 s
FORK = r"""
python3 - <<'EOF'
import errno, os, time
children, error = [], "none"
for _ in range(5000):
    try:
        pid = os.fork()
    except OSError as exc:
        error = errno.errorcode[exc.errno]
        break
    if pid == 0:
        try:
            os.execv("/bin/sleep", ["sleep", "30"])
        finally:
            os._exit(1)
    children.append(pid)
print(f"forked={len(children)} error={error}", flush=True)
time.sleep(4)  # held while the test looks at the others
for pid in children:
    os.kill(pid, 9)
for pid in children:
    os.waitpid(pid, 0)
EOF
"""


def _close(region: Region) -> None:
    """Delete every stack of the region (its servers outlive it otherwise), then close it."""
    for header in (region.cloud.state_dir / "stacks").glob("*/stack.json"):
        remove_stack(region.cloud, header.parent.name)
    region.cloud.guests.settle()
    region.close()


@pytest.fixture
def region(tmp_path):
    opened = Region(tmp_path / "state")
    yield opened
    _close(opened)


@pytest.fixture
def bystander(tmp_path, environment):
    """A second sandbox (another local cloud, another environment) and how to ask it."""
    other = Region(tmp_path / "bystander")
    outputs = other.boot(environment, "bystander", ("by1",), "10.0.12.0/24")
    yield lambda: other.sh(outputs["queues"]["by1"], "echo alive", timeout=20).strip()
    _close(other)


def _boot(region: Region, environment, flavor: str, cidr: str, stack: str = "victim"):
    outputs = region.boot(lambda *a, **k: environment(*a, flavor=flavor, **k), stack,
                          ("vm1",), cidr)
    return outputs["queues"]["vm1"], outputs["vm1-id"]


def _group(server_id: str) -> ServerGroup:
    hierarchies, _ = cgroups.host_hierarchies()
    assert hierarchies is not None
    return ServerGroup(hierarchies, server_id)


@NO_NAMESPACES
def test_filling_tmp_on_the_smallest_flavor_ends_in_enospc_not_a_dead_server(
        region, environment):
    """/tmp's files are memory the server's group counts and no process's: had /tmp room
    past the RAM, the kernel would kill the agent or the init, not the writer."""
    queue, _ = _boot(region, environment, "m1.tiny", "10.0.18.0/24")
    attack = """
dd if=/dev/zero of=/tmp/big bs=1M count=250 2>&1 | grep -o 'No space left on device' | head -1
echo "written=$(( $(stat -c %s /tmp/big) / 1048576 ))"
rm -f /tmp/big
"""
    out = region.sh(queue, attack, 120)
    assert "No space left on device" in out
    assert int(out.split("written=")[1].split()[0]) <= FLAVORS["m1.tiny"].ram_mib // 4
    assert region.sh(queue, "echo recovered").strip() == "recovered"


def _host_works() -> bool:
    return subprocess.run(["true"], check=False).returncode == 0


@NO_NAMESPACES
def test_limits_follow_the_flavor_and_go_with_the_server(region, environment):
    sizes = {}
    for flavor, cidr in (("m1.tiny", "10.0.13.0/24"), ("m1.medium", "10.0.14.0/24")):
        queue, server_id = _boot(region, environment, flavor, cidr, stack=flavor)
        seen = region.sh(queue, "python3 -c 'import os; s = os.statvfs(\"/sandbox\"); "
                                "print(s.f_blocks * s.f_frsize)'")
        sizes[flavor] = (server_id, int(seen))
    for flavor, (server_id, disk_bytes) in sizes.items():
        wanted = FLAVORS[flavor]
        # ext4's own metadata takes a little of the image
        assert 0.85 * wanted.disk_mib * MIB < disk_bytes <= wanted.disk_mib * MIB
        group = _group(server_id)
        memory = group.controller_path("memory")
        limit = (memory / "memory.max") if (memory / "memory.max").exists() \
            else memory / "memory.limit_in_bytes"
        assert int(limit.read_text()) == wanted.ram_mib * MIB
        pids_max = group.controller_path("pids") / "pids.max"
        assert int(pids_max.read_text()) == DEFAULT_MAX_PROCESSES
        cpu = group.controller_path("cpu")
        quota = (cpu / "cpu.max").read_text().split()[0] if (cpu / "cpu.max").exists() \
            else (cpu / "cpu.cfs_quota_us").read_text()
        assert int(quota) == wanted.vcpus * cgroups.CPU_PERIOD_US
        # every process of the sandbox is in the group
        inside = set(netns.pids(netns.server_namespace(server_id)))
        assert inside and inside <= set(group.pids())
        assert os.path.ismount(region.cloud.state_dir / "servers" / server_id)

    for flavor, (server_id, _) in sizes.items():
        remove_stack(region.cloud, flavor)
        region.cloud.guests.settle()
        folder = region.cloud.state_dir / "servers" / server_id
        assert not folder.exists() and not folder.with_name(f".{server_id}.disk").exists()
        assert not any(path.exists() for path in _group(server_id).paths)


@NO_NAMESPACES
def test_5000_processes_end_in_eagain_inside_the_server(region, environment, bystander):
    queue, server_id = _boot(region, environment, "m1.small", "10.0.15.0/24")
    attack = FORK
    result: dict[str, str] = {}
    worker = threading.Thread(target=lambda: result.update(out=region.sh(queue, attack, 60)))
    worker.start()
    group = _group(server_id)
    deadline = time.monotonic() + 30
    while len(group.pids()) < DEFAULT_MAX_PROCESSES - 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    held = len(group.pids())
    assert DEFAULT_MAX_PROCESSES - 20 <= held <= DEFAULT_MAX_PROCESSES
    assert bystander() == "alive" and _host_works()  # while the server is full
    worker.join(60)

    facts = dict(item.split("=") for item in result["out"].split())
    assert facts["error"] == "EAGAIN"
    assert int(facts["forked"]) < DEFAULT_MAX_PROCESSES
    assert region.sh(queue, "echo recovered").strip() == "recovered"


@NO_NAMESPACES
def test_the_process_limit_comes_from_the_configuration(tmp_path, environment):
    configured = Region(tmp_path / "state")
    configured.cloud.close()
    configured.cloud = LocalCloud.from_config({
        "state_dir": str(tmp_path / "state"), "broker_url": AMQP, "max_processes": "40",
        "poll_interval": "0.01"})
    try:
        queue, _ = _boot(configured, environment, "m1.small", "10.0.21.0/24")
        out = configured.sh(queue, FORK.replace("5000", "100"), 60)
    finally:
        _close(configured)

    facts = dict(item.split("=") for item in out.split())
    assert facts["error"] == "EAGAIN" and int(facts["forked"]) < 40


@NO_NAMESPACES
def test_2_gib_of_memory_ends_in_an_oom_kill_inside_the_server(region, environment, bystander):
    queue, server_id = _boot(region, environment, "m1.small", "10.0.16.0/24")
    attack = r"""
python3 - <<'EOF'
held = []
for _ in range(32):  # 32 x 64 MiB = 2 GiB, each page written
    held.append(b"x" * (64 << 20))
    print(f"held={len(held) * 64}", flush=True)
EOF
echo "exit=$?"
"""
    out = region.sh(queue, attack, 60).split()

    assert out[-1] == "exit=137"  # SIGKILL from the OOM killer
    held = int(out[-2].split("=")[1])
    assert held < FLAVORS["m1.small"].ram_mib
    memory = _group(server_id).controller_path("memory")
    events = memory / "memory.events"
    kills = events.read_text() if events.exists() else (memory / "memory.oom_control").read_text()
    assert int(dict(line.split() for line in kills.splitlines())["oom_kill"]) >= 1
    assert bystander() == "alive" and _host_works()
    assert region.sh(queue, "echo recovered").strip() == "recovered"  # the agent lived


@NO_NAMESPACES
def test_a_server_whose_init_the_oom_killer_takes_is_in_error_saying_so(region, environment):
    """A guest that offers its own init to the OOM killer ends its server: the ERROR says
    the kernel killed its processes for want of memory (it said "could not start").
    A plan's processes come first for the OOM killer (oom_score_adj 500), so the guest
    spreads its memory over processes of 40 MiB each, each a smaller victim than init."""
    queue, server_id = _boot(region, environment, "m1.tiny", "10.0.17.0/24")
    attack = r"""
echo 1000 > /proc/1/oom_score_adj
for i in 1 2 3 4 5 6 7 8; do
    python3 -c 'import time; held = b"x" * (40 << 20); time.sleep(30)' &
done
wait
"""
    with pytest.raises(Exception):  # noqa: B017,PT011 - the plan's answer never comes
        region.sh(queue, attack, 30)
    deadline = time.monotonic() + 20
    while region.cloud.guests.failure(server_id) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    why = region.cloud.guests.failure(server_id) or ""
    assert "is in ERROR: its agent stopped; the kernel killed" in why
    assert "for want of memory (the m1.tiny flavor's 256 MiB)" in why


@NO_NAMESPACES
def test_a_plan_past_the_server_s_memory_is_killed_and_the_server_goes_on(region,
                                                                         environment):
    # Twenty processes of some 20 MiB each, each smaller than the agent: a plan's processes
    # are the OOM killer's first choice (before, it took the agent and init, the biggest).
    queue, server_id = _boot(region, environment, "m1.tiny", "10.0.18.0/24")
    hogs = r"""
for i in $(seq 20); do
    python3 -c 'import time; held = b"x" * (14 << 20); time.sleep(5)' &
done
wait
echo done
"""
    assert region.sh(queue, hogs, 60).strip() == "done"
    assert region.cloud.guests.failure(server_id) is None
    assert region.sh(queue, "echo still up").strip() == "still up"


@NO_NAMESPACES
def test_2_gib_under_sandbox_ends_in_enospc(region, environment, bystander):
    queue, server_id = _boot(region, environment, "m1.small", "10.0.17.0/24")
    attack = """
dd if=/dev/zero of=/sandbox/fill bs=1M count=2048 2>&1 | grep -o 'No space left on device' \
    | head -1
echo "written=$(( $(stat -c %s /sandbox/fill) / 1048576 ))"
rm -f /sandbox/fill
"""
    out = region.sh(queue, attack, 120)

    assert "No space left on device" in out
    written = int(out.split("written=")[1].split()[0])
    assert 0.8 * FLAVORS["m1.small"].disk_mib < written < FLAVORS["m1.small"].disk_mib
    image = region.cloud.state_dir / "servers" / f".{server_id}.disk"
    assert image.stat().st_blocks * 512 <= FLAVORS["m1.small"].disk_mib * MIB  # host: bounded
    assert bystander() == "alive" and _host_works()
    assert region.sh(queue, "echo recovered").strip() == "recovered"


def test_hierarchies_are_found_in_v1_and_refused_when_read_only():
    v1 = ("30 25 0:26 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids\n"
          "31 25 0:27 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n"
          "32 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n")
    found, missing = find_hierarchies(v1)
    assert missing == [] and found is not None and found.version == 1
    assert found.roots["cpu"] == Path("/sys/fs/cgroup/cpu,cpuacct")

    found, missing = find_hierarchies(v1.replace("/memory rw,", "/memory ro,"))
    assert found is None
    assert missing == ["a writable cgroup hierarchy with the memory controller "
                       "(cgroup v2, or v1 mounted rw)"]


def test_a_v2_hierarchy_with_the_controllers_is_preferred(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    mountinfo = (f"25 1 0:22 / {tmp_path} rw,nosuid - cgroup2 cgroup2 rw\n"
                 "30 25 0:26 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids\n")
    found, missing = find_hierarchies(mountinfo)
    assert missing == [] and found is not None and found.version == 2
    assert set(found.roots.values()) == {tmp_path}

    (tmp_path / "cgroup.controllers").write_text("cpu memory\n")  # no pids: v1 lacks some
    found, missing = find_hierarchies(mountinfo)
    assert found is None and "memory, cpu controllers" in missing[0]


def test_a_host_without_cgroups_refuses_sandboxes_and_says_what_is_missing(
        tmp_path, monkeypatch):
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("22 1 0:21 / /proc rw,nosuid - proc proc rw\n")
    monkeypatch.setattr(cgroups, "MOUNTINFO", mountinfo)

    assert ("a writable cgroup hierarchy with the memory, pids, cpu controllers "
            "(cgroup v2, or v1 mounted rw)") in missing_for_namespaces()
    with pytest.raises(SandboxError, match="this host lacks .*memory, pids, cpu controllers"):
        NamespaceLauncher()


@NO_NAMESPACES
def test_a_stopped_server_keeps_its_disk_and_starts_again_with_it(region, environment):
    queue, server_id = _boot(region, environment, "m1.tiny", "10.0.18.0/24")
    region.sh(queue, "echo kept > /sandbox/data")
    folder = region.cloud.state_dir / "servers" / server_id

    region.cloud.guests.stop(server_id)  # as a host's restart leaves it: nothing mounted
    assert not os.path.ismount(folder) and not _group(server_id).paths[0].exists()
    assert (folder / "server.json").is_file()  # the server is still known below its disk
    region.cloud.guests.resume(server_id)

    assert os.path.ismount(folder)
    assert region.sh(queue, "cat /sandbox/data").strip() == "kept"


@NO_NAMESPACES
def test_after_a_killed_engine_and_sandbox_the_next_engine_removes_everything(
        tmp_path, environment, crash):
    state = tmp_path / "state"
    first = Region(state)
    queue, server_id = _boot(first, environment, "m1.small", "10.0.19.0/24")
    first.client.close()
    for relay in first.cloud.guests.launcher._relays.values():
        relay.close()
    crash(first.cloud)  # the engine dies without stopping its server...
    for pid in _group(server_id).pids():  # ...and so does everything in the sandbox
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass  # ended with a process killed before it (its init, say)
    folder = state / "servers" / server_id
    assert os.path.ismount(folder)

    second = Region(state, first.name)
    try:
        remove_stack(second.cloud, "victim")
        second.cloud.guests.settle()
    finally:
        second.close()

    assert not folder.exists() and not os.path.ismount(folder)
    assert not folder.with_name(f".{server_id}.disk").exists()
    assert not any(path.exists() for path in _group(server_id).paths)
    assert not netns.exists(netns.server_namespace(server_id))


@NO_NAMESPACES
def test_a_resize_gives_the_running_server_its_new_flavor(region, environment):
    def sized(flavor: str) -> dict:
        return environment(("vm1",), results=region.client.result_queue, environment_id="rs",
                           cidr="10.0.20.0/24", flavor=flavor)

    server_id = push_stack(region.cloud, "victim", sized("m1.tiny"))["vm1-id"]
    queue = region.client.queue_name("rs", "vm1")
    region.sh(queue, "echo kept > /sandbox/data")

    assert push_stack(region.cloud, "victim", sized("m1.medium"))["vm1-id"] == server_id

    wanted = FLAVORS["m1.medium"]
    memory = _group(server_id).controller_path("memory") / "memory.limit_in_bytes"
    if memory.exists():  # v1; v2 names it memory.max
        assert int(memory.read_text()) == wanted.ram_mib * MIB
    seen = region.sh(queue, "cat /sandbox/data; python3 -c 'import os; "
                            "s = os.statvfs(\"/sandbox\"); print(s.f_blocks * s.f_frsize)'")
    kept, size = seen.split()
    assert kept == "kept" and 0.85 * wanted.disk_mib * MIB < int(size) <= wanted.disk_mib * MIB

    with pytest.raises(StackFailed, match="a disk cannot shrink"):
        push_stack(region.cloud, "victim", sized("m1.small"))
