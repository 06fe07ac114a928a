"""What a guest may take through its relay, and what releasing its server removes (issue
44): real sandboxes, each server with a broker user of its own, the real broker.

A guest opening connections through its relay with its own login is held to its
relay's connection limit, on one engine thread each; deleting its server leaves
nothing of it on the host or the broker. A release whose steps fail (the relay, the
management API) still removes what it can, fails the stack's delete, records what is
left, and the next command removes it.
"""

from __future__ import annotations

import json
import logging
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from murano_common import procfs
from murano_engine.clouds.base import StackFailed, push_stack, remove_stack
from murano_engine.clouds.local import netns
from murano_engine.clouds.local import relay as relay_module
from murano_engine.clouds.local.cgroups import ServerGroup, host_hierarchies
from murano_engine.clouds.local.cloud import LocalCloud
from murano_engine.clouds.local.relay import DEFAULT_LIMITS, Relay
from murano_engine.engine.config import load_config
from murano_engine.messaging import AgentClient
from murano_engine.messaging.identities import BrokerIdentities, BrokerIdentity
from murano_engine.messaging.management import ManagementApi, name
from tests.clouds.test_sandboxes import AMQP, NO_NAMESPACES, Region

pytestmark = NO_NAMESPACES

#: a plan Body: as many connections as it can of 100, through the relay, with the agent's
#: own login; they stay open (in the agent) after the plan
OPEN_100 = """
import amqp, configparser, sys
from urllib.parse import unquote, urlsplit
conf = configparser.ConfigParser(interpolation=None)
conf.read("/sandbox/agent.effective.conf")
url = urlsplit(conf.get("rabbitmq", "url"))
held, refused = [], 0
for _ in range(100):
    connection = amqp.Connection(
        f"{url.hostname}:{url.port}", userid=unquote(url.username),
        password=unquote(url.password), virtual_host=unquote(url.path[1:]) or "/",
        connect_timeout=5, read_timeout=10)
    try:
        connection.connect()
        held.append(connection)
    except Exception:
        refused += 1
sys.held_connections = held
return [len(held), refused]
"""
#: a plan Body: close what OPEN_100 held, then connect again (the relay has to see those
#: end first) and open a channel
CONNECT_AGAIN = """
import amqp, configparser, sys, time
from urllib.parse import unquote, urlsplit
for connection in sys.held_connections:
    connection.close()
conf = configparser.ConfigParser(interpolation=None)
conf.read("/sandbox/agent.effective.conf")
url = urlsplit(conf.get("rabbitmq", "url"))
deadline = time.monotonic() + 10
while True:
    connection = amqp.Connection(
        f"{url.hostname}:{url.port}", userid=unquote(url.username),
        password=unquote(url.password), virtual_host=unquote(url.path[1:]) or "/",
        connect_timeout=5, read_timeout=10)
    try:
        connection.connect()
        break
    except Exception:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.1)
connection.channel().basic_qos(0, 1, False)
connection.close()
return "connected"
"""


class IdentityRegion(Region):
    """A local cloud whose servers have broker users of their own (a Region otherwise)."""

    def __init__(self, state: Path, identities: BrokerIdentities) -> None:
        self.name = f"gb-{uuid.uuid4().hex[:8]}"
        self.client = AgentClient(AMQP, region=self.name)
        self.identities = identities
        self.cloud = self.open_cloud(state)

    def open_cloud(self, state: Path) -> LocalCloud:
        return LocalCloud(state, broker_url=AMQP, poll_interval=0.01,
                          identities=self.identities)

    def boot_one(self, environment: Callable[..., dict], stack: str,
                 cidr: str) -> Server:
        env_id = uuid.uuid4().hex[:8]
        queue = self.client.queue_name(env_id, "vm1")
        identity = self.identities.mint(queue, self.client.result_queue)
        outputs = push_stack(self.cloud, stack, environment(
            ("vm1",), results=self.client.result_queue, environment_id=env_id, cidr=cidr,
            identities={"vm1": identity}))
        return Server(outputs["vm1-id"], outputs["network-id"], queue, identity,
                      self.cloud.state_dir)

    def run(self, queue: str, body: str, timeout: float = 60) -> object:
        plan = self.client.build_plan({"FormatVersion": "2.0.0", "Scripts": {}, "Files": {},
                                       "Body": body}, None)
        return self.client.call(queue, plan, timeout)

    def close(self) -> None:
        super().close()
        self.identities.remove_exchange(self.client.result_queue)


@dataclass
class Server:
    """A server booted by :meth:`IdentityRegion.boot_one`."""

    id: str
    network: str
    queue: str
    identity: BrokerIdentity
    state: Path

    @property
    def folder(self) -> Path:
        return self.state / "servers" / self.id

    def processes(self) -> list[int]:
        """Its processes: those in its network namespace and its sandbox's first one."""
        first = self.state / "servers" / f".{self.id}.pid"
        found = netns.pids(netns.server_namespace(self.id))
        return found + [int(first.read_text().split()[0])] if first.exists() else found

    def left_on_host(self, processes: list[int]) -> list[str]:
        """What of the server is still on the host (of ``processes``, those running)."""
        hierarchies, _ = host_hierarchies()
        assert hierarchies is not None
        loops = subprocess.run(["losetup", "--list", "--noheadings", "--output", "BACK-FILE"],
                               capture_output=True, text=True, check=True).stdout
        left = [f"network namespace {namespace}" for namespace in
                (netns.server_namespace(self.id), netns.network_namespace(self.network))
                if netns.exists(namespace)]
        left += [f"control group {path}" for path in ServerGroup(hierarchies, self.id).paths
                 if path.exists()]
        left += [f"mount {line.split()[4]}" for line in
                 Path("/proc/self/mountinfo").read_text().splitlines() if self.id in line]
        left += [f"loop device of {line.strip()}" for line in loops.splitlines()
                 if self.id in line]
        left += [f"file {path.name}" for path in self.state.glob(f"servers/.{self.id}*")]
        left += [f"process {pid}" for pid in processes if procfs.running(pid)]
        return left

    def left_on_broker(self, api: ManagementApi) -> list[str]:
        """Its broker user and queue, as far as they are still there."""
        left = []
        if api.request("GET", f"/api/users/{name(self.identity.login)}",
                       missing_ok=True) is not None:
            left.append(f"broker user {self.identity.login}")
        if api.request("GET", f"/api/queues/%2F/{name(self.queue)}",
                       missing_ok=True) is not None:
            left.append(f"queue {self.queue}")
        return left


def _identities() -> BrokerIdentities:
    identities = BrokerIdentities.from_config(load_config(None, environ={}))
    assert identities is not None
    return identities


def _remove_left(region: IdentityRegion, stack: str) -> None:
    """Remove what a failed assertion left (a later cloud takes it back)."""
    cloud = region.open_cloud(region.cloud.state_dir)
    try:
        remove_stack(cloud, stack)
    except Exception:  # noqa: BLE001,S110 - already removed: the test's own end did it
        pass
    finally:
        cloud.close()


def test_a_guest_opening_connections_through_its_relay_is_held_to_its_limit(
        tmp_path, environment, caplog):
    region = IdentityRegion(tmp_path / "state", _identities())
    try:
        server = region.boot_one(environment, "greedy", "10.0.44.0/24")
        assert region.sh(server.queue, "echo up").strip() == "up"
        threads = threading.active_count()
        with caplog.at_level(logging.DEBUG, logger=relay_module.__name__):
            held, refused = region.run(server.queue, OPEN_100)
        # the agent's own connection and three more; one engine thread each
        assert (held, refused) == (DEFAULT_LIMITS.connections - 1, 100 - held)
        assert threading.active_count() - threads <= held
        warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warnings) == 1 and "refused a connection: it holds 4" in warnings[0]

        # while the guest holds its connections, another project's server is made and
        # works: its own local cloud (as murano-api gives each project), the same engine
        other = IdentityRegion(tmp_path / "other-project", region.identities)
        try:
            neighbour = other.boot_one(environment, "neighbour", "10.0.46.0/24")
            assert other.sh(neighbour.queue, "echo neighbour").strip() == "neighbour"
            neighbour_processes = neighbour.processes()
            remove_stack(other.cloud, "neighbour")
            assert neighbour.left_on_host(neighbour_processes) == []
        finally:
            other.close()
            _remove_left(other, "neighbour")

        assert region.run(server.queue, CONNECT_AGAIN) == "connected"  # it serves on
        assert region.sh(server.queue, "echo still up").strip() == "still up"

        processes = server.processes()
        remove_stack(region.cloud, "greedy")
        assert server.left_on_host(processes) == []
        assert server.left_on_broker(region.identities.api) == []
        assert list((tmp_path / "state" / "servers-records").iterdir()) == []
    finally:
        region.close()
        _remove_left(region, "greedy")


def test_a_release_whose_steps_fail_removes_the_rest_and_is_tried_again(
        tmp_path, environment, monkeypatch):
    """The relay's close raises (as one did when a thread of it had not started) and the
    management API cannot be reached: the server's host resources go all the same, the
    stack's delete fails, saying why, and fails again while the broker user cannot be
    removed; the next command removes it."""
    identities = _identities()
    reachable = identities.api
    region = IdentityRegion(tmp_path / "state", identities)
    try:
        server = region.boot_one(environment, "failing", "10.0.45.0/24")
        assert region.sh(server.queue, "echo up").strip() == "up"
        processes = server.processes()
        close = Relay.close

        def close_then_raise(relay: Relay) -> None:
            close(relay)
            raise RuntimeError("cannot join thread before it is started")

        monkeypatch.setattr(Relay, "close", close_then_raise)
        identities.api = ManagementApi("http://guest:guest@127.0.0.1:9")  # nothing there
        with pytest.raises(StackFailed, match="cannot join thread"):
            remove_stack(region.cloud, "failing")
        assert server.left_on_host(processes) == []
        assert server.left_on_broker(reachable) == [f"broker user {server.identity.login}",
                                                    f"queue {server.queue}"]
        release = json.loads((tmp_path / "state" / "servers-records"
                              / f"{server.id}.releasing").read_text())
        assert release["stack"] == "failing" and release["left"] == ["broker", "sandbox"]
        assert "cannot be reached" in release["failed"]["broker"]

        monkeypatch.undo()  # the relay closes again; the management API is still away
        with pytest.raises(StackFailed, match="management API .* cannot be reached"):
            remove_stack(region.cloud, "failing")  # the stack is not reported deleted
        assert server.left_on_broker(reachable) == [f"broker user {server.identity.login}",
                                                    f"queue {server.queue}"]

        identities.api = reachable
        region.cloud.close()
        region.cloud = region.open_cloud(tmp_path / "state")  # the next command
        remove_stack(region.cloud, "failing")
        assert server.left_on_broker(reachable) == []
        assert server.left_on_host(processes) == []
        assert list((tmp_path / "state" / "servers-records").iterdir()) == []
        assert not server.folder.exists()
    finally:
        monkeypatch.undo()
        identities.api = reachable
        region.close()
        _remove_left(region, "failing")


def test_an_agent_whose_broker_user_goes_is_cut_off_first_and_tries_no_login_again(
        tmp_path, environment):
    """An instance released before its server is deleted revokes its broker user; its
    agent would log in again, refused, until the delete (hundreds of servers in an
    environment's destroy, each every few seconds): the cloud cuts the agent off its
    relay first, and the server runs on until deleted."""
    region = IdentityRegion(tmp_path / "state", _identities())
    try:
        server = region.boot_one(environment, "released", "10.0.47.0/24")
        assert region.sh(server.queue, "echo up").strip() == "up"
        api = region.identities.api

        def connections() -> list[dict]:
            return [c for c in api.request("GET", "/api/connections") or []
                    if c.get("user") == server.identity.login]

        deadline = time.monotonic() + 15  # the broker lists connections some seconds late
        while not connections() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert connections(), "the agent is connected with its own login"
        processes = server.processes()
        region.cloud.detach_agent(server.queue)
        region.identities.revoke(server.queue)
        deadline = time.monotonic() + 15
        while connections() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert connections() == []
        launcher = region.cloud.guests.launcher  # no relay is left to the broker
        assert server.id not in launcher._relays  # noqa: SLF001
        log = server.state / "servers-records" / f"{server.id}.out"
        before = log.read_text(errors="replace") if log.exists() else ""
        time.sleep(3)  # the agent's reconnection delay (1 s, then longer)
        after = log.read_text(errors="replace") if log.exists() else ""
        assert "ACCESS_REFUSED" not in after[len(before):], after[len(before):]
        assert connections() == []
        assert all(procfs.running(pid) for pid in processes), "the server runs on"
        remove_stack(region.cloud, "released")
        assert server.left_on_host(processes) == []
        assert server.left_on_broker(api) == []
    finally:
        region.close()
        _remove_left(region, "released")
