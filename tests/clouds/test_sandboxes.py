"""Local servers are sandboxes: the real agent in its own namespaces, over the real broker.

Each test boots servers on the local cloud with ``isolation = namespaces``,
sends execution plans through RabbitMQ and checks from inside (what a plan's
script can see and reach) and from outside (processes, users, namespaces).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from murano_common import amqp
from murano_engine.clouds.base import push_stack, remove_stack
from murano_engine.clouds.local import netns
from murano_engine.clouds.local.cloud import LocalCloud
from murano_engine.clouds.local.sandbox import missing_for_namespaces
from murano_engine.messaging import AgentClient
from tests import processes

AMQP = "amqp://guest:guest@127.0.0.1:5672//"

NO_NAMESPACES = pytest.mark.skipif(bool(missing_for_namespaces()),
                                reason=f"no namespaces here: {missing_for_namespaces()}")


class Region:
    """A local cloud with real sandboxed agents and a client for their plans."""

    def __init__(self, state: Path, name: str = "") -> None:
        self.name = name or f"sb-{uuid.uuid4().hex[:8]}"
        self.client = AgentClient(AMQP, region=self.name)
        self.cloud = LocalCloud(state, broker_url=AMQP, poll_interval=0.01)

    def boot(self, environment, stack: str, servers: tuple[str, ...], cidr: str) -> dict:
        env_id = uuid.uuid4().hex[:8]
        outputs = push_stack(self.cloud, stack, environment(
            servers, results=self.client.result_queue, environment_id=env_id, cidr=cidr))
        outputs["queues"] = {name: self.client.queue_name(env_id, name) for name in servers}
        return outputs

    def sh(self, queue: str, script: str, timeout: float = 30) -> str:
        """Run ``script`` with /bin/sh on a server; its standard output."""
        template = {"FormatVersion": "2.1.0", "Body": "return run().stdout",
                    "Scripts": {"run": {"Type": "Application", "EntryPoint": "run.sh"}}}
        plan = self.client.build_plan(template, lambda name: f"#!/bin/sh\n{script}\n".encode())
        return self.client.call(queue, plan, timeout)

    def close(self) -> None:
        self.cloud.close()
        self.client.close()
        with amqp.connection(AMQP, "tests") as conn:  # its results queue, left empty
            conn.default_channel.queue_delete(self.client.result_queue)


@pytest.fixture
def region(tmp_path):
    opened = Region(tmp_path / "state")
    yield opened
    opened.close()


def _server_ids(outputs: dict, names: tuple[str, ...]) -> list[str]:
    return [outputs[f"{name}-id"] for name in names]


@NO_NAMESPACES
def test_a_plan_runs_in_the_sandbox_as_the_server(region, environment, tmp_path, monkeypatch):
    monkeypatch.setenv("MURANO_ENGINE_ONLY", "the engine's")  # an operator's setting
    outputs = region.boot(environment, "one", ("vm1",), "10.0.7.0/24")
    assert Path("/etc/shadow").exists()
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host only")
    queue = outputs["queues"]["vm1"]

    seen = region.sh(queue, f"""
        echo "host=$(hostname)"
        echo "engine_env=${{MURANO_ENGINE_ONLY:-unset}}"
        echo "home=$HOME"
        echo "cwd=$(pwd)"
        echo "ip=$(ip -4 -o addr show dev eth0 | awk '{{print $4}}')"
        cat {secret} >/dev/null 2>&1 && echo "secret=readable" || echo "secret=hidden"
        test -e /etc/shadow && echo "shadow=present" || echo "shadow=hidden"
        touch /usr/probe 2>/dev/null && echo "usr=writable" || echo "usr=read-only"
        touch /tmp/probe /dev/shm/probe && echo "tmp=writable" || echo "tmp=read-only"
        echo "hosts=$(grep -c ' vm1$' /etc/hosts)"
        head -c 4 /dev/zero > /dev/null && echo "devices=usable" || echo "devices=missing"
        test -e /.host && echo "host_root=left" || echo "host_root=gone"
        echo "processes=$(ls /proc | grep -c '^[0-9]')"
        grep -l pytest /proc/[0-9]*/cmdline >/dev/null 2>&1 && echo "pytest=seen" \
            || echo "pytest=unseen"
        python3 -c 'import socket; socket.create_connection(("127.0.0.1", 5432), 1)' \
            2>/dev/null && echo "postgres=reached" || echo "postgres=unreached"
        setsid sh -c 'sleep 0.1' </dev/null >/dev/null 2>&1 &
        sleep 0.6
        echo "zombies=$(grep -l '^State:.*Z' /proc/[0-9]*/status 2>/dev/null | wc -l)"
    """)

    facts = dict(line.split("=", 1) for line in seen.split())
    assert facts["host"] == "vm1"
    assert facts["engine_env"] == "unset"  # the engine's environment stays outside
    assert facts["home"] == "/sandbox"
    assert facts["cwd"].startswith("/sandbox/agent")
    assert facts["ip"] == f"{outputs['vm1-ip']}/24"
    assert facts["secret"] == "hidden" and facts["shadow"] == "hidden"
    assert facts["usr"] == "read-only" and facts["tmp"] == "writable"
    assert facts["hosts"] == "1" and facts["devices"] == "usable"
    assert facts["host_root"] == "gone"
    assert facts["pytest"] == "unseen" and int(facts["processes"]) < 20
    assert facts["postgres"] == "unreached"  # the host's loopback services are out of reach
    assert facts["zombies"] == "0"  # orphans are reaped, as a VM's init does

    # A v2 plan's Body (Python run by the agent) is in the sandbox too.
    probe = f"[os.path.exists({str(secret)!r}), os.path.exists('/etc/shadow')]"
    body = {"FormatVersion": "2.0.0", "Scripts": {}, "Files": {},
            "Body": f"import os, socket\nreturn {probe} + [socket.gethostname()]"}
    assert region.client.call(queue, region.client.build_plan(body, None), 30) == [
        False, False, "vm1"]

    # From outside: the agent and its scripts run as an unprivileged user; only the
    # sandbox's first process (it holds the namespaces, waiting for their PID 1) is root.
    (server_id,) = _server_ids(outputs, ("vm1",))
    pids = netns.pids(netns.server_namespace(server_id))
    first = int((region.cloud.state_dir / "servers" / f".{server_id}.pid").read_text().split()[0])
    uids = {pid: found[0] for pid in pids if (found := _status(pid, "Uid"))}
    assert uids.pop(first) == "0"
    assert len(uids) >= 2 and len(set(uids.values())) == 1 and "0" not in uids.values(), uids

    remove_stack(region.cloud, "one")
    assert not netns.exists(netns.server_namespace(server_id))
    assert not [p for p in pids if Path(f"/proc/{p}").exists()
                and (Path(f"/proc/{p}/stat").read_text().split()[2] != "Z")]


@NO_NAMESPACES
def test_servers_reach_their_own_network_and_nothing_else(region, environment):
    mine = region.boot(environment, "mine", ("vm1", "vm2"), "10.0.8.0/24")
    other = region.boot(environment, "other", ("vm1",), "10.0.9.0/24")
    port = 18099
    for outputs, name in ((mine, "vm2"), (other, "vm1")):
        region.sh(outputs["queues"][name], f"""
            setsid python3 -m http.server {port} --bind 0.0.0.0 >/dev/null 2>&1 </dev/null &
            for i in $(seq 50); do
                python3 -c 'import socket; socket.create_connection(("127.0.0.1", {port}), 1)' \
                    2>/dev/null && break
                sleep 0.1
            done
            echo ready
        """)

    def reach(address: str) -> str:
        return region.sh(mine["queues"]["vm1"], f"""
            python3 -c 'import socket; socket.create_connection(("{address}", {port}), 2)' \
                2>/dev/null && echo reached || echo unreached
        """).strip()

    assert mine["vm1-ip"] != mine["vm2-ip"]
    assert reach(mine["vm2-ip"]) == "reached"       # same environment, by address
    assert reach(other["vm1-ip"]) == "unreached"    # another environment's server
    # Both servers of "mine" listen on the same port without clashing.
    region.sh(mine["queues"]["vm1"], f"""
        setsid python3 -m http.server {port} --bind 0.0.0.0 >/dev/null 2>&1 </dev/null &
        sleep 0.5
        echo started
    """)
    assert reach("127.0.0.1") == "reached"

    ids = _server_ids(mine, ("vm1", "vm2")) + _server_ids(other, ("vm1",))
    remove_stack(region.cloud, "mine")
    remove_stack(region.cloud, "other")
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for server_id in ids:
        assert netns.server_namespace(server_id) not in left
    for network in (mine["network-id"], other["network-id"]):
        assert netns.network_namespace(network) not in left


@NO_NAMESPACES
def test_a_killed_engine_finds_its_sandboxes_again(tmp_path, environment, crash):
    state = tmp_path / "state"
    first = Region(state)
    outputs = first.boot(environment, "keep", ("vm1",), "10.0.10.0/24")
    (server_id,) = _server_ids(outputs, ("vm1",))
    agent = _agent_pid(server_id)
    # The engine goes away without stopping its servers (as a crash would)...
    first.client.close()
    for relay in first.cloud.guests.launcher._relays.values():
        relay.close()
    crash(first.cloud)
    # ...and a new one resumes the running sandbox instead of starting a second agent.
    second = Region(state, first.name)
    second.cloud.attach_agent(outputs["queues"]["vm1"])  # what the engine's Agent does
    try:
        # The agent reconnects through the new relay (its delays grow from 1 s).
        assert second.sh(outputs["queues"]["vm1"], "hostname", timeout=30).strip() == "vm1"
        assert _agent_pid(server_id) == agent  # the same agent, not a second one
        remove_stack(second.cloud, "keep")
        assert not netns.exists(netns.server_namespace(server_id))
    finally:
        second.close()


def _agent_pid(server_id: str) -> int:
    """The agent's process (waiting for the sandbox's set-up to hand over to it)."""
    deadline = time.monotonic() + 10
    while True:
        found = [p for p in netns.pids(netns.server_namespace(server_id))
                 if processes.is_agent(p)]
        if found or time.monotonic() > deadline:
            (pid,) = found
            return pid
        time.sleep(0.05)


def _status(pid: int, field: str) -> list[str] | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return line.split()[1:]
    except OSError:
        return None
    return None


def test_without_namespaces_servers_are_refused_with_what_is_missing(tmp_path, monkeypatch):
    import murano_engine.clouds.local.sandbox as sandbox

    real_which = sandbox.shutil.which
    monkeypatch.setattr(sandbox.shutil, "which",
                        lambda name: None if name == "ip" else real_which(name))
    with pytest.raises(sandbox.SandboxError) as refused:
        LocalCloud(tmp_path / "state", broker_url=AMQP)
    message = str(refused.value)
    assert "the 'ip' command" in message and "isolation = none" in message
    assert not (tmp_path / "state" / "servers").exists() or not any(
        (tmp_path / "state" / "servers").iterdir())
    with pytest.raises(sandbox.SandboxError, match="isolation must be one of"):
        LocalCloud(tmp_path / "other", isolation="chroot")


@NO_NAMESPACES
def test_a_killed_agent_comes_back_and_what_it_started_runs_on(region, environment):
    outputs = region.boot(environment, "respawn", ("vm1",), "10.0.11.0/24")
    queue = outputs["queues"]["vm1"]
    (server_id,) = _server_ids(outputs, ("vm1",))
    region.sh(queue, "setsid sh -c 'sleep 60' </dev/null >/dev/null 2>&1 & echo $! > /sandbox/bg")
    agent = _agent_pid(server_id)

    os.kill(agent, signal.SIGKILL)  # as a crash would; the server's init starts it again

    assert region.sh(queue, "kill -0 $(cat /sandbox/bg) && echo alive").strip() == "alive"
    assert _agent_pid(server_id) != agent
    remove_stack(region.cloud, "respawn")
    assert not netns.exists(netns.server_namespace(server_id))
