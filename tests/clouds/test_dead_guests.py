"""A guest that dies is a server in ERROR: a sandbox whose agent cannot start, or is killed
and cannot be restarted, is marked ERROR at once with the agent's last output, and a plan
waiting on it fails within seconds naming the server and that output."""

from __future__ import annotations

import base64
import os
import signal
import threading
import time

import pytest

from murano_engine.clouds.base import push_stack, remove_stack
from murano_engine.clouds.local import netns
from murano_engine.clouds.local.cloud import LocalCloud
from murano_engine.engine.config import load_config
from murano_engine.engine.services import close_services, engine_services
from murano_engine.messaging import AgentClient, GuestDown
from tests.clouds.test_sandboxes import NO_NAMESPACES, Region, _agent_pid, _server_ids

#: How soon a plan waiting on a dead guest must fail.
FAIL_WITHIN = 10.0
PING = {"FormatVersion": "2.0.0", "Body": "return 1", "Scripts": {}, "Files": {}}


@pytest.fixture
def region(tmp_path):
    opened = Region(tmp_path / "state")
    opened.client.watch_guests(opened.cloud.guest_failure)  # as engine_services does
    yield opened
    opened.close()


def _break_agent_config(stack: dict, server: str) -> None:
    """Give ``server``'s agent a config it cannot load (an ill-typed option)."""
    entry = stack["resources"][f"boot_config-{server}"]["properties"]["cloud_config"][
        "write_files"][0]
    text = base64.b64decode(entry["content"]).decode()
    entry["content"] = base64.b64encode(
        text.replace("[rabbitmq]\n", "[rabbitmq]\nheartbeat = often\n").encode()).decode()


def _call_until_failure(client: AgentClient, queue: str) -> tuple[float, GuestDown]:
    """Seconds a plan sent to ``queue`` waited before failing, and its error."""
    started = time.monotonic()
    with pytest.raises(GuestDown) as failed:
        client.call(queue, dict(PING, ID=os.urandom(8).hex()), 60, environment="dg1")
    return time.monotonic() - started, failed.value


@NO_NAMESPACES
def test_a_server_whose_agent_cannot_start_is_in_error_and_its_plan_fails_at_once(
    environment, tmp_path
):
    """Through the engine's own services (engine_services wires the cloud's watch into
    the agents' client)."""
    (tmp_path / "engine.ini").write_text(f"[local_cloud]\nstate_dir = {tmp_path}/state\n")
    services = engine_services(load_config(tmp_path / "engine.ini", {}))
    cloud, client = services["cloud"], services["agents"]
    try:
        stack = environment(("bad",), results=client.result_queue, environment_id="dg1",
                            cidr="10.0.31.0/24")
        _break_agent_config(stack, "bad")
        outputs = push_stack(cloud, "dead-start", stack)
        (server_id,) = _server_ids(outputs, ("bad",))
        queue = client.queue_name("dg1", "bad")

        waited, error = _call_until_failure(client, queue)

        assert waited < FAIL_WITHIN, f"the plan waited {waited:.1f} s"
        message = str(error)
        assert f"server bad ({server_id}) is in ERROR: its agent could not start" in message, \
            message
        assert "option 'heartbeat' = 'often'" in message, message  # the agent's own words
        assert cloud.guests.failure(server_id) == message
        assert not netns.pids(netns.server_namespace(server_id)), "the sandbox is gone"
        remove_stack(cloud, "dead-start")
        assert cloud.guest_failure(queue) is None
        cloud.settle()
        assert list((tmp_path / "state" / "servers-records").iterdir()) == []
    finally:
        close_services(services)


@NO_NAMESPACES
def test_a_killed_agent_that_cannot_restart_makes_its_server_error_and_plans_fail_fast(
    region, environment, tmp_path
):
    outputs = region.boot(environment, "dead-kill", ("vm1",), "10.0.32.0/24")
    queue = outputs["queues"]["vm1"]
    (server_id,) = _server_ids(outputs, ("vm1",))
    assert region.sh(queue, "echo up").strip() == "up"
    agent = _agent_pid(server_id)
    folder = tmp_path / "state" / "servers" / server_id
    (folder / "agent.effective.conf").unlink()  # what the init would restart it with
    # The guest may rewrite the config in its folder; the server's queue stays as booted.
    conf = folder / "agent.conf"
    conf.write_text(conf.read_text().replace(queue, "e-other-h-other"))

    outcome: dict = {}

    def wait_on_plan() -> None:  # a plan in flight when the agent dies
        outcome["waited"], outcome["error"] = _call_until_failure(region.client, queue)

    waiting = threading.Thread(target=wait_on_plan)
    os.kill(agent, signal.SIGKILL)
    killed = time.monotonic()
    waiting.start()
    waiting.join(60)

    assert "error" in outcome, "the plan did not fail"
    assert time.monotonic() - killed < FAIL_WITHIN, outcome["waited"]
    message = str(outcome["error"])
    assert (f"server vm1 ({server_id}) is in ERROR: its agent ended and could not be "
            "restarted") in message, message
    assert "agent.effective.conf" in message, message  # why it could not come back
    assert "cannot be restarted" in message, message
    assert region.cloud.guest_failure("e-other-h-other") is None

    # The ERROR outlives the engine: a later cloud on the folder does not revive it.
    region.cloud.close()
    later = LocalCloud(tmp_path / "state", broker_url=region.client._url, poll_interval=0.01)
    try:
        later.attach_agent(queue)
        assert later.guest_failure(queue) == message
        assert not netns.pids(netns.server_namespace(server_id))
        remove_stack(later, "dead-kill")
        assert later.guest_failure(queue) is None
        assert not (tmp_path / "state" / "servers-records" / f"{server_id}.error").exists()
    finally:
        later.close()
