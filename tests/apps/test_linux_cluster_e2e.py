"""End to end on the local cloud: examples/linux-cluster.json, the replicated key-value store.

``murano-engine deploy`` with two nodes; the replicas serve what the master
holds, fetched over loopback; a redeploy scales to three nodes; ``murano-engine
destroy`` leaves no process and no server sandbox behind. Each server is a
sandbox folder whose in-process agent runs the package's shell plans here.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "linux-cluster.json"
pytestmark = pytest.mark.skipif(shutil.which("python3") is None or sys.platform != "linux",
                                reason="the local cloud's Linux guests need python3 on Linux")


def _free_base_port(count: int = 3) -> int:
    for base in range(28700, 29700, 10):
        try:
            sockets = []
            for port in range(base, base + count):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
        return base
    pytest.skip("no free loopback ports for the key-value nodes")


def _engine(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "murano_engine.cli", *args, "-l", str(REPO / "dsl_packages"),
         "--state", str(tmp / "state.json"), "--config", str(tmp / "engine.ini")],
        capture_output=True, text=True, timeout=300, cwd=tmp)


def _processes(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "kv.py" in command and marker in command:
            found.append(int(entry.name))
    return found


def _get(port: int, path: str) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
        return response.read()


def _put(port: int, key: str, value: str) -> None:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/kv/{key}",
                                     data=value.encode(), method="PUT")
    with urllib.request.urlopen(request, timeout=2):
        pass


def _replica_serves(port: int, key: str, value: str, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if _get(port, f"/kv/{key}").decode() == value:
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def _app(state_file: Path) -> dict:
    return json.loads(state_file.read_text())["Objects"]["applications"][0]


def _check_cluster(tmp: Path, base: int, nodes: int) -> None:
    app = _app(tmp / "state.json")
    assert app["masterNode"] == "kv-1"
    assert app["masterAddress"] == f"127.0.0.1:{base}"
    assert f"read back from {nodes - 1} replica(s)" in app["lastCheck"]
    assert len(app["servers"]) == nodes
    for port in range(base + 1, base + nodes):
        status = json.loads(_get(port, "/status"))
        assert status["role"] == "replica" and status["master"] == f"127.0.0.1:{base}"
    value = f"from-pytest-{nodes}"
    _put(base, "pytest", value)
    for port in range(base + 1, base + nodes):
        assert _replica_serves(port, "pytest", value), f"replica on {port} never got the write"
    refused = urllib.request.Request(f"http://127.0.0.1:{base + 1}/kv/x", data=b"y", method="PUT")
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(refused, timeout=2)
    assert raised.value.code == 409, "a replica must refuse writes"


def test_deploy_scale_destroy(tmp_path: Path):
    cloud = tmp_path / "cloud"
    (tmp_path / "engine.ini").write_text(f"[local_cloud]\nstate_dir = {cloud}\n")
    base = _free_base_port()
    model = json.loads(EXAMPLE.read_text())
    model["applications"][0]["basePort"] = base
    (tmp_path / "two.json").write_text(json.dumps(model))
    model["applications"][0]["nodeCount"] = 3
    (tmp_path / "three.json").write_text(json.dumps(model))
    marker = str(cloud)
    try:
        done = _engine(tmp_path, "deploy", str(tmp_path / "two.json"))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "stage 6/6" in done.stdout
        _check_cluster(tmp_path, base, 2)
        assert len(_processes(marker)) == 2

        done = _engine(tmp_path, "deploy", str(tmp_path / "three.json"))
        assert done.returncode == 0, done.stdout + done.stderr
        _check_cluster(tmp_path, base, 3)
        assert len(_processes(marker)) == 3

        done = _engine(tmp_path, "destroy")
        assert done.returncode == 0, done.stdout + done.stderr
        deadline = time.monotonic() + 5
        while _processes(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _processes(marker) == [], "a key-value process outlived destroy"
        servers = cloud / "servers"
        assert not servers.exists() or not any(servers.iterdir()), "a server sandbox is left"
        assert not (tmp_path / "state.json").exists()
    finally:
        for pid in _processes(marker):  # only if an assertion failed before destroy
            os.kill(pid, signal.SIGKILL)
