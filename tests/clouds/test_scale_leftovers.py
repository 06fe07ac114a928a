"""Nothing of a 50-server environment is left on the host after its destroy (issue 47).

HelloWeb with 50 servers, deployed and destroyed by ``murano-engine`` as a user
does it, every isolation feature on (the project's server quota lifted); after
the destroy, none of its network namespaces, control groups, mounts, loop devices,
processes, broker users or queues is left (:mod:`tests.leftovers` and the host
itself). About half a minute on a quiet machine; ``benchmarks/scale_bench.py``
checks the same at 200 servers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from murano_engine.clouds.local import netns
from murano_engine.clouds.local.sandbox import missing_for_namespaces
from tests.helloweb import hello_web
from tests.leftovers import Footprint, leftovers

REPO = Path(__file__).resolve().parents[2]
ENGINE = Path(sys.executable).with_name("murano-engine")
SERVERS = 50

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or bool(missing_for_namespaces()),
    reason="the servers are sandboxes (Linux namespaces, root)")


def _started(pid: int) -> str | None:
    """A process's start time (None once it ended, a zombie too: it holds nothing but its
    pid until the host's init collects it): with its pid, which process it is."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def _host_leftovers(cloud: Path, servers: list[str],
                    processes: dict[int, str]) -> list[str]:
    """What the host still holds of the servers: control groups, mounts and loop
    devices of the cloud's folder, processes that lived in their namespaces."""
    left = [f"control group {root / server}"
            for root in Path("/sys/fs/cgroup").rglob("murano-sandboxes")
            for server in servers if (root / server).exists()]
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    left += [f"mount {line.split()[4]}" for line in mounts if str(cloud) in line]
    loops = subprocess.run(["losetup", "--list", "--noheadings", "--output", "BACK-FILE"],
                           capture_output=True, text=True, check=False).stdout
    left += [f"loop device of {line.strip()}" for line in loops.splitlines()
             if str(cloud) in line]
    left += [f"process {pid} ({Path(f'/proc/{pid}/comm').read_text().strip()})"
             for pid, started in processes.items() if _started(pid) == started]
    return left


def _engine(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run([str(ENGINE), *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=600, check=False)
    assert done.returncode == 0, f"murano-engine {args[0]} failed:\n{done.stdout[-3000:]}" \
                                 f"\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def test_a_destroyed_50_server_environment_leaves_nothing(tmp_path):
    model = hello_web(SERVERS)
    environment = model["?"]["id"]
    (tmp_path / "model.json").write_text(json.dumps(model))
    cloud, state = tmp_path / "cloud", tmp_path / "state.json"
    env = dict(os.environ, PYTHONPATH=str(REPO), MURANO_LOCAL_CLOUD_STATE_DIR=str(cloud),
               MURANO_QUOTAS_SERVERS="-1")
    footprint = Footprint(cloud)
    try:
        output = _engine("deploy", str(tmp_path / "model.json"), "-l", "dsl_packages",
                         "--state", str(state), env=env)
        assert f"is deployed ({SERVERS} units)" in output
        footprint.note(environment, model, json.loads(state.read_text()).get("queues", ()))
        servers = sorted(s for s in footprint.servers if not s.startswith("."))  # (files)
        assert len(servers) == SERVERS
        processes = {pid: started for server in servers
                     for pid in netns.pids(netns.server_namespace(server))
                     if (started := _started(pid)) is not None}
        assert len(processes) >= SERVERS  # each server's agent at least
    finally:
        _engine("destroy", "--state", str(state), env=env)
    assert leftovers(footprint) == []
    assert _host_leftovers(cloud, servers, processes) == []
