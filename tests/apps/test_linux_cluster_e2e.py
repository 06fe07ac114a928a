"""End to end on the local cloud: examples/linux-cluster.json, the replicated key-value store.

``murano-engine deploy`` with two nodes, then a redeploy scaling to three,
then ``murano-engine destroy``; the servers outlive each command, as VMs do.
Sandboxed (``isolation = namespaces``): each node listens on its own address
in its own network namespace; the replicas copy the master over their
environment's network, never over loopback; the host reaches the nodes only
through their namespaces; destroy leaves no namespace and no sandbox process.
``isolation = none``: every node on the host's 127.0.0.1, a port each.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from murano_engine.clouds.local.sandbox import missing_for_namespaces
from tests.apps import kv_nodes
from tests.apps.kv_nodes import Node

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
        [sys.executable, "-m", "murano_engine.cli.main", *args, "-l", str(REPO / "dsl_packages"),
         "--state", str(tmp / "state.json"), "--config", str(tmp / "engine.ini")],
        capture_output=True, text=True, timeout=300, cwd=tmp)


def _app(state_file: Path) -> dict:
    return json.loads(state_file.read_text())["Objects"]["applications"][0]


def _check_cluster(tmp: Path, base: int, count: int, sandboxed: bool) -> list[Node]:
    app = _app(tmp / "state.json")
    nodes = kv_nodes.nodes(app, sandboxed)
    master, replicas = nodes[0], nodes[1:]
    assert app["masterNode"] == "kv-1" == master.name
    assert app["masterAddress"] == master.address
    assert [n.port for n in nodes] == list(range(base, base + count))
    assert f"read back from {count - 1} replica(s)" in app["lastCheck"]
    assert master.status()["role"] == "master"
    for replica in replicas:
        status = replica.status()
        assert status["role"] == "replica" and status["master"] == master.address
        assert status["sync_error"] is None
    value = f"from-pytest-{count}"
    assert master.request("/kv/pytest", "PUT", value)[0] == 200
    for replica in replicas:
        assert replica.serves("pytest", value), f"{replica.name} never got the write"
    assert replicas[0].request("/kv/x", "PUT", "y")[0] == 409, "a replica must refuse writes"
    return nodes


def _check_isolation(nodes: list[Node], cloud: Path) -> None:
    """Each node on its own address, all on one network, reached over it, not the host."""
    master = nodes[0]
    ips = [ipaddress.ip_address(n.ip) for n in nodes]
    assert len(set(ips)) == len(nodes), f"nodes share an address: {ips}"
    assert not any(ip.is_loopback for ip in ips)
    networks = [json.loads((cloud / "servers" / n.server_id / "server.json").read_text())
                ["interfaces"] for n in nodes]
    assert all(len(i) == 1 for i in networks)
    assert len({i[0]["network_id"] for i in networks}) == 1, "the nodes are on one network"
    subnet = ipaddress.ip_interface(networks[0][0]["address"]).network
    assert all(ip in subnet for ip in ips)
    for node in nodes:
        assert node.status()["address"] == node.address
        shown = subprocess.run(["ip", "-n", node.namespace, "-4", "-o", "addr", "show"],
                               capture_output=True, text=True, check=True).stdout
        assert f"inet {node.ip}/" in shown
        assert len(kv_nodes.sandbox_kv_pids(node)) == 1, f"one service in {node.namespace}"
    for replica in nodes[1:]:
        # the master is reached over the network: from the replica's namespace at its
        # address, while nothing answers at the master's port on the replica's loopback
        assert replica.request("/status", address=master.address)[0] == 200
        assert replica.request("/status", address=f"127.0.0.1:{master.port}",
                               timeout=1)[0] == 0
    # the nodes' addresses are theirs alone: not the host's (which cannot bind them)
    for node in nodes:
        with pytest.raises(OSError), socket.socket() as probe:
            probe.bind((node.ip, 0))


@pytest.mark.parametrize("isolation", ["namespaces", "none"])
def test_deploy_scale_destroy(tmp_path: Path, isolation: str):
    sandboxed = isolation == "namespaces"
    if sandboxed and missing_for_namespaces():
        pytest.skip("sandboxes need " + ", ".join(missing_for_namespaces()))
    cloud = tmp_path / "cloud"
    (tmp_path / "engine.ini").write_text(
        f"[local_cloud]\nstate_dir = {cloud}\nisolation = {isolation}\n")
    base = _free_base_port()
    model = json.loads(EXAMPLE.read_text())  # its shape; the values the test relies on:
    model["applications"][0].update(name="kv", nodeCount=2, basePort=base)
    (tmp_path / "two.json").write_text(json.dumps(model))
    model["applications"][0]["nodeCount"] = 3
    (tmp_path / "three.json").write_text(json.dumps(model))
    marker = str(cloud)
    server_ids: list[str] = []
    networks: set[str] = set()
    try:
        done = _engine(tmp_path, "deploy", str(tmp_path / "two.json"))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "stage 6/6" in done.stdout
        nodes = _check_cluster(tmp_path, base, 2, sandboxed)
        server_ids = [n.server_id for n in nodes]
        if sandboxed:
            networks = kv_nodes.network_ids(cloud, server_ids)
            _check_isolation(nodes, cloud)
        else:
            assert len(kv_nodes.kv_processes(marker)) == 2

        done = _engine(tmp_path, "deploy", str(tmp_path / "three.json"))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "  masterNode: kv-1\n" in done.stdout  # a redeploy prints the outputs too
        nodes = _check_cluster(tmp_path, base, 3, sandboxed)
        assert [n.server_id for n in nodes[:2]] == server_ids, "the first two servers are kept"
        server_ids = [n.server_id for n in nodes]
        if sandboxed:
            _check_isolation(nodes, cloud)
            sandbox_pids = [p for n in nodes for p in kv_nodes.netns.pids(n.namespace)]
        else:
            assert len(kv_nodes.kv_processes(marker)) == 3
            sandbox_pids = []

        done = _engine(tmp_path, "destroy")
        assert done.returncode == 0, done.stdout + done.stderr
        deadline = time.monotonic() + 5
        while (kv_nodes.kv_processes(marker) or kv_nodes.alive(sandbox_pids)) \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        assert kv_nodes.kv_processes(marker) == [], "a key-value process outlived destroy"
        assert kv_nodes.alive(sandbox_pids) == [], "a sandbox process outlived destroy"
        assert kv_nodes.namespaces_left(server_ids, networks) == []
        servers = cloud / "servers"
        assert not servers.exists() or not any(servers.iterdir()), "a server sandbox is left"
        assert not (tmp_path / "state.json").exists()
    finally:  # only if an assertion failed before destroy
        for pid in kv_nodes.kv_processes(marker):
            os.kill(pid, signal.SIGKILL)
        if sandboxed:
            kv_nodes.force_cleanup(server_ids, networks)


def test_a_taken_port_is_named_before_the_service_claims_it(tmp_path: Path):
    """With isolation = none the nodes share the host's loopback: a port someone else
    listens on is refused at once, with the script's words, not answered by a stranger."""
    (tmp_path / "engine.ini").write_text(
        f"[local_cloud]\nstate_dir = {tmp_path / 'cloud'}\nisolation = none\n")
    base = _free_base_port(1)
    model = json.loads(EXAMPLE.read_text())
    model["applications"][0].update(name="kv", nodeCount=1, basePort=base)
    (tmp_path / "one.json").write_text(json.dumps(model))
    try:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", base))
            taken.listen()
            done = _engine(tmp_path, "deploy", str(tmp_path / "one.json"))
        assert done.returncode == 1
        assert f"port {base} on 127.0.0.1 is taken by another program" in done.stderr
        assert "exit code 1" in done.stderr
        assert "stage 6/6" not in done.stdout
    finally:
        assert _engine(tmp_path, "destroy").returncode == 0
