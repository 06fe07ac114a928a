"""The local cloud: stack create/update/delete, addresses, persistence, failures."""

from __future__ import annotations

import email
import ipaddress
import json
import os
import threading
import time

import pytest

from murano_engine.clouds import open_cloud
from murano_engine.clouds.base import (
    StackConflict,
    StackFailed,
    StackNotFound,
    push_stack,
    remove_stack,
)
from murano_engine.clouds.local import LocalCloud


def sandboxes(cloud: LocalCloud) -> set[str]:
    root = cloud.state_dir / "servers"
    return {p.name for p in root.iterdir()} if root.exists() else set()


def test_open_cloud_defaults_to_the_local_cloud(tmp_path):
    cloud = open_cloud({"local_cloud": {"state_dir": str(tmp_path / "lc")}, "heat": {}})
    try:
        assert isinstance(cloud, LocalCloud)
        assert (tmp_path / "lc" / "stacks").is_dir()
    finally:
        cloud.close()


def test_create_environment_stack(cloud, agents, environment):
    outputs = push_stack(cloud, "murano-env", environment())

    stack = cloud.get("murano-env")
    assert stack.status == "CREATE_COMPLETE"
    assert stack.template["resources"].keys() == environment()["resources"].keys()
    bare = cloud.get("murano-env", template=False)  # what HeatStack.output() asks
    assert bare.template is None and bare.outputs == stack.outputs == outputs
    assert stack.status_reason == "Stack CREATE completed successfully"
    ips = [outputs["vm1-ip"], outputs["vm2-ip"]]
    assert len(set(ips)) == 2
    for ip in ips:
        assert ipaddress.ip_address(ip) in ipaddress.ip_network("10.0.5.0/24")
        assert ip != "10.0.5.1"  # the gateway
    (fixed,) = outputs["addresses-vm1"]
    assert fixed["addr"] == outputs["vm1-ip"] and fixed["OS-EXT-IPS:type"] == "fixed"
    assert fixed["version"] == 4 and fixed["OS-EXT-IPS-MAC:mac_addr"].startswith("fa:16:3e:")
    # one agent per server, configured from its user data, storage in its sandbox
    running = agents.running()
    assert set(running) == {"e1-hvm1", "e1-hvm2"}
    assert sandboxes(cloud) == cloud.guests.running() == {outputs["vm1-id"], outputs["vm2-id"]}
    for name in ("vm1", "vm2"):
        spec = running[f"e1-h{name}"].spec
        sandbox = cloud.state_dir / "servers" / outputs[f"{name}-id"]
        assert spec.folder == sandbox and spec.hostname == name
        assert spec.broker_url == "amqp://guest:guest@rabbit.example.org:5672/"
        (interface,) = spec.interfaces
        assert interface.address == f"{outputs[f'{name}-ip']}/24"
        assert interface.mac == fixed["OS-EXT-IPS-MAC:mac_addr"] or name == "vm2"
        assert "result_routing_key = -execution-results-region" in spec.agent_ini
        assert "input_queue = e1-h" in (sandbox / "agent.conf").read_text()
        parts = email.message_from_string((sandbox / "user_data").read_text()).get_payload()
        assert parts[1].get_payload(decode=True) == b"#!/bin/sh\necho booted\n"


def test_stack_reports_template_parameters_and_timestamps(cloud, environment):
    template = environment(("vm1",))
    push_stack(cloud, "env", template)
    stack = cloud.get("env")
    assert stack.template == template
    assert stack.created and stack.updated is None
    assert stack.outputs["network-id"] == cloud.find("env-net", "OS::Neutron::Net").id


def test_update_adds_keeps_and_removes_servers(cloud, agents, environment):
    first = push_stack(cloud, "env", environment(("vm1", "vm2")))
    old_vm2 = agents.running()["e1-hvm2"]

    second = push_stack(cloud, "env", environment(("vm1", "vm3")))

    stack = cloud.get("env")
    assert stack.status == "UPDATE_COMPLETE" and stack.updated is not None
    # vm1 untouched: same server, same address, same running agent
    assert second["vm1-id"] == first["vm1-id"] and second["vm1-ip"] == first["vm1-ip"]
    assert len([a for a in agents if a.input_queue == "e1-hvm1"]) == 1
    # vm2 gone with its agent and sandbox; vm3 new with an address of its own
    assert not old_vm2.running
    assert set(agents.running()) == {"e1-hvm1", "e1-hvm3"}
    assert sandboxes(cloud) == {second["vm1-id"], second["vm3-id"]}
    assert second["vm3-ip"] not in (second["vm1-ip"],)
    assert "vm2-id" not in second


def test_changed_rules_update_the_security_group_in_place(cloud, environment):
    push_stack(cloud, "env", environment(("vm1",)))
    (group,) = cloud.records("OS::Neutron::SecurityGroup")
    before = group.id

    push_stack(cloud, "env", environment(("vm1",), ssh_port=2222))

    (group,) = cloud.records("OS::Neutron::SecurityGroup")
    assert group.id == before and group.status == "UPDATE_COMPLETE"
    assert {r.get("port_range_min") for r in group.data["rules"]} == {None, 2222}


def test_a_new_image_replaces_the_server(cloud, agents, environment):
    first = push_stack(cloud, "env", environment(("vm1",)))
    old_agent = agents.running()["e1-hvm1"]

    second = push_stack(cloud, "env", environment(("vm1",), image="debian-12"))

    assert second["vm1-id"] != first["vm1-id"]
    assert not old_agent.running
    assert sandboxes(cloud) == {second["vm1-id"]}
    assert second["vm1-ip"] == first["vm1-ip"]  # the port stayed


def test_delete_leaves_nothing_behind(cloud, agents, environment):
    outputs = push_stack(cloud, "env", environment())

    remove_stack(cloud, "env")

    assert cloud.get("env") is None
    assert not agents.running() and len(agents) == 2
    assert cloud.guests.running() == set()
    assert sandboxes(cloud) == set()
    assert not (cloud.state_dir / "stacks" / "env").exists()
    # the addresses are free again
    again = push_stack(cloud, "env", environment())
    assert {again["vm1-ip"], again["vm2-ip"]} == {outputs["vm1-ip"], outputs["vm2-ip"]}


def test_empty_template_deletes_the_stack(cloud, environment):
    push_stack(cloud, "env", environment(("vm1",)))
    assert push_stack(cloud, "env", {"heat_template_version": "2013-05-23"}) == {}
    assert cloud.get("env") is None and sandboxes(cloud) == set()


def test_state_survives_a_restart(make_cloud, agents, environment):
    cloud = make_cloud()
    first = push_stack(cloud, "env", environment())
    cloud.close()
    assert set(agents.running()) == {"e1-hvm1", "e1-hvm2"}  # servers outlive the engine
    saved = json.loads((cloud.state_dir / "stacks" / "env" / "stack.json").read_text())
    assert saved["status"] == "CREATE_COMPLETE"

    reopened = make_cloud()

    stack = reopened.get("env")
    assert stack.status == "CREATE_COMPLETE" and stack.outputs == first
    assert set(agents.running()) == {"e1-hvm1", "e1-hvm2"} and len(agents) == 2  # taken back
    # taken addresses stay taken: a new server gets a fresh one
    third = push_stack(reopened, "env", environment(("vm1", "vm2", "vm3")))
    assert third["vm3-ip"] not in {first["vm1-ip"], first["vm2-ip"], "10.0.5.1"}
    assert third["vm1-id"] == first["vm1-id"]


def test_an_operation_cut_short_is_failed_on_restart(make_cloud, agents, environment, crash):
    cloud = make_cloud()
    agents.start_delay = 0.3
    cloud.create("env", environment(("vm1",)))
    time.sleep(0.1)  # the server is still booting
    crash(cloud)

    other = make_cloud()

    stack = other.peek("env")
    assert stack.status == "CREATE_FAILED"
    assert "interrupted" in stack.status_reason


def test_a_stack_belongs_to_one_engine_process_at_a_time(make_cloud, agents, environment):
    first = make_cloud()
    outputs = push_stack(first, "env", environment(("vm1",)))
    second = make_cloud()

    with pytest.raises(StackConflict, match=f"in use by another engine process .pid {os.getpid()}"):
        second.get("env")
    assert len(agents) == 1  # the second took nothing up

    first.close()
    assert second.get("env").outputs == outputs  # free again: taken up, agent and all
    assert set(agents.running()) == {"e1-hvm1"}


def test_the_lock_of_a_stack_that_does_not_exist_is_let_go(
        make_cloud, environment, tmp_path):
    locks = tmp_path / "state" / "locks"
    cloud = make_cloud()
    assert cloud.get("never-made") is None  # asking takes the lock: no other process
    with pytest.raises(StackNotFound):      # may make it meanwhile
        cloud.delete("deleted-twice")
    push_stack(cloud, "env", environment(("vm1",)))
    remove_stack(cloud, "env")
    assert sorted(p.name for p in locks.iterdir()) == ["deleted-twice.lock",
                                                       "never-made.lock"]
    push_stack(cloud, "kept", environment(("vm1",)))
    cloud.settle()  # a long-lived cloud (the API's) lets them go after each task
    assert sorted(p.name for p in locks.iterdir()) == ["kept.lock"]  # its stack is there
    assert cloud.get("never-made") is None
    cloud.close()
    assert sorted(p.name for p in locks.iterdir()) == ["kept.lock"]


def test_a_crash_mid_create_leaves_nothing_the_next_push_does_not_clean(make_cloud, agents,
                                                                        environment, crash):
    class Hanging(type(agents)):
        """A boot that never ends in time: the engine dies while the server boots."""

        release = threading.Event()

        def start(self, spec) -> None:
            self.release.wait(10)

    hanging = Hanging()
    first = make_cloud(launcher=hanging)
    first.create("env", environment(("vm1",)))
    try:
        wait_for(lambda: sandboxes(first))
        (half_made,) = sandboxes(first)
        crash(first)

        other = make_cloud()
        outputs = push_stack(other, "env", environment(("vm1",)))

        assert outputs["vm1-id"] != half_made
        assert sandboxes(other) == {outputs["vm1-id"]}  # the half-made server is gone
        assert [a.spec.server_id for a in agents if a.running] == [outputs["vm1-id"]]
    finally:
        hanging.release.set()


def wait_for(condition, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def test_parallel_creation_of_fifty_servers(cloud, agents, environment):
    agents.start_delay = 0.1  # a slow boot: 5 s if servers were made one by one
    names = tuple(f"vm{i}" for i in range(50))
    started = time.monotonic()

    outputs = push_stack(cloud, "big", environment(names))

    assert time.monotonic() - started < 3.0
    assert len(agents.running()) == 50
    assert len({outputs[f"{n}-ip"] for n in names}) == 50


def test_busy_stack_conflicts_and_push_waits_it_out(cloud, agents, environment):
    agents.start_delay = 0.2
    cloud.create("env", environment(("vm1",)))
    with pytest.raises(StackConflict):
        cloud.update("env", environment(("vm1", "vm2")))
    with pytest.raises(StackConflict):
        cloud.create("env", environment(("vm1",)))

    outputs = push_stack(cloud, "env", environment(("vm1", "vm2")))

    assert {"vm1-ip", "vm2-ip"} <= set(outputs)
    assert cloud.get("env").status == "UPDATE_COMPLETE"


def test_resource_failure_fails_the_stack_with_the_resource_named(cloud, agents, environment):
    template = environment(("vm1",))
    template["resources"]["subnet"]["properties"]["cidr"] = "10.0.5.0/33"

    with pytest.raises(StackFailed) as caught:
        push_stack(cloud, "env", template)

    stack = caught.value.stack
    assert stack.status == "CREATE_FAILED"
    assert stack.status_reason.startswith("Resource CREATE failed: resources.subnet: cidr")
    assert "10.0.5.0/33" in stack.status_reason
    assert not agents.running()  # the server depends on the subnet: never started
    remove_stack(cloud, "env")
    assert cloud.get("env") is None and sandboxes(cloud) == set()


def test_failed_stack_is_repaired_by_the_next_push(cloud, agents, environment):
    template = environment(("vm1",))
    template["resources"]["subnet"]["properties"]["cidr"] = "not-a-cidr"
    with pytest.raises(StackFailed):
        push_stack(cloud, "env", template)

    outputs = push_stack(cloud, "env", environment(("vm1",)))

    assert outputs["vm1-ip"].startswith("10.0.5.")
    assert set(agents.running()) == {"e1-hvm1"}


def test_open_cloud_waits_for_stacks_engine_stack_timeout_unless_local_cloud_sets_one(tmp_path):
    from murano_engine.engine.config import load_config

    config = load_config(None, {"MURANO_LOCAL_CLOUD_STATE_DIR": str(tmp_path / "lc"),
                                "MURANO_ENGINE_STACK_TIMEOUT": "42"})
    cloud = open_cloud(config)
    try:
        assert cloud.timeout == 42
    finally:
        cloud.close()
    config["local_cloud"]["stack_timeout"] = 5.0
    cloud = open_cloud(config)
    try:
        assert cloud.timeout == 5
    finally:
        cloud.close()


def test_a_stacks_outputs_are_worked_out_once_per_change_of_the_cloud(
        cloud, agents, environment, monkeypatch):
    """Every instance of an environment reads the stack's outputs after each push: they
    are worked out again only when something of the cloud's stacks changed."""
    from murano_engine.clouds.local import cloud as module
    worked_out = []
    real = module.outputs
    monkeypatch.setattr(module, "outputs",
                        lambda *args: worked_out.append(1) or real(*args))
    push_stack(cloud, "env", environment())
    first = cloud.get("env", template=False).outputs
    done = len(worked_out)
    first["added-by-a-reader"] = 1  # a reader's copy: the next one does not see it
    for _ in range(5):
        again = cloud.get("env", template=False).outputs
        assert "added-by-a-reader" not in again and again["vm2-ip"] == first["vm2-ip"]
    assert len(worked_out) == done
    push_stack(cloud, "env", environment(("vm1",)))  # vm2 goes
    after = cloud.get("env", template=False).outputs
    assert len(worked_out) > done
    assert after["vm1-ip"] == first["vm1-ip"] and "vm2-ip" not in after
