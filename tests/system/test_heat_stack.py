"""io.murano.system.HeatStack against the real local cloud."""

from __future__ import annotations

import base64
import json
import time
import uuid

import pytest

from murano_common import amqp
from murano_engine.clouds import StackFailed
from murano_engine.clouds.local import LocalCloud, netns
from murano_engine.dsl import values
from murano_engine.messaging import AgentClient
from murano_engine.system.heat_stack import HeatStackError, _State, merge, stack_name

AMQP = "amqp://guest:guest@127.0.0.1:5672//"


@pytest.fixture
def cloud(tmp_path):
    service = LocalCloud(tmp_path / "cloud", broker_url=AMQP, poll_interval=0.01)
    yield service
    service.close()


def agent_ini(queue: str, results: str) -> str:
    return (f"[DEFAULT]\nstorage = /var/murano/plans\n[rabbitmq]\nurl = {AMQP}\n"
            f"input_queue = {queue}\nresult_routing_key = {results}\n")


def server_template(queue: str, results: str) -> dict:
    cloud_config = "#cloud-config\n" + json.dumps({"write_files": [{
        "path": "/etc/murano/agent.conf", "encoding": "b64",
        "content": base64.b64encode(agent_ini(queue, results).encode()).decode()}]})
    return {
        "resources": {
            "net": {"type": "OS::Neutron::Net", "properties": {"name": "net"}},
            "subnet": {"type": "OS::Neutron::Subnet",
                       "properties": {"network": {"get_resource": "net"},
                                      "cidr": "10.0.5.0/24"}},
            "vm": {"type": "OS::Nova::Server", "depends_on": ["subnet"],
                   "properties": {"flavor": "m1.small", "image": "ubuntu-22.04",
                                  "user_data": cloud_config, "user_data_format": "RAW",
                                  "networks": [{"network": {"get_resource": "net"}}]}},
        },
        "outputs": {"vm-id": {"value": {"get_resource": "vm"}},
                    "vm-ip": {"value": {"get_attr": ["vm", "first_address"]}}},
    }


def running_servers(cloud) -> set[str]:
    """The servers whose agents run (their sandboxes hold processes)."""
    return {server_id for server_id in cloud.guests.running()
            if netns.pids(netns.server_namespace(server_id))}


def wait_running(cloud, count: int, timeout: float = 30.0) -> set[str]:
    """running_servers() once it holds ``count``: a push returns as the servers boot,
    and on a busy machine a sandbox's processes can appear a moment later."""
    deadline = time.monotonic() + timeout
    while len(found := running_servers(cloud)) != count:
        assert time.monotonic() < deadline, f"{found} running after {timeout} s"
        time.sleep(0.1)
    return found


def test_push_creates_the_stack_and_its_agent_answers(cloud, make_object):
    client = AgentClient(AMQP, region=f"hs-{uuid.uuid4().hex[:8]}")
    queue = client.queue_name("env1", "vm")
    executor, stack = make_object("io.murano.system.HeatStack", {"cloud": cloud},
                                  name="murano-My Env-abc", description="test")
    try:
        assert executor.call(stack, "current") == {}
        executor.call(stack, "updateTemplate", (server_template(queue, client.result_queue),))
        assert cloud.get("murano-My-Env-abc") is None
        executor.call(stack, "push")

        remote = cloud.get("murano-My-Env-abc")
        assert remote.status == "CREATE_COMPLETE"
        assert remote.template["heat_template_version"] == "2013-05-23"
        assert remote.template["description"] == "test"
        outputs = values.thaw(executor.call(stack, "output"))
        assert outputs["vm-ip"].startswith("10.0.5.")
        assert outputs["vm-id"] in cloud.guests.running()
        assert client.is_ready(queue, 20)
        executor.call(stack, "delete")
        assert cloud.get("murano-My-Env-abc") is None
    finally:
        client.close()
        with amqp.connection(AMQP, "tests") as conn:  # its results queue, left empty
            conn.default_channel.queue_delete(client.result_queue)


def test_empty_template_deletes_the_stack_and_stops_the_agent(cloud, make_object):
    executor, stack = make_object("io.murano.system.HeatStack", {"cloud": cloud}, name="s1")
    executor.call(stack, "setTemplate", (server_template("q1", "r1"),))
    executor.call(stack, "push")
    (server_id,) = wait_running(cloud, 1)

    template = values.thaw(executor.call(stack, "current"))
    template["resources"] = {}
    template["outputs"] = {}
    executor.call(stack, "setTemplate", (template,))
    executor.call(stack, "push")

    assert cloud.get("s1") is None
    assert running_servers(cloud) == set()
    assert not netns.exists(netns.server_namespace(server_id))
    assert executor.call(stack, "output") == {}


def test_update_push_and_reload_from_the_cloud(cloud, make_object):
    executor, stack = make_object("io.murano.system.HeatStack", {"cloud": cloud}, name="s2")
    executor.call(stack, "updateTemplate", ({
        "parameters": {"size": {"type": "number"}},
        "resources": {"a": {"type": "OS::Heat::RandomString",
                            "properties": {"length": {"get_param": "size"}}}},
        "outputs": {"a": {"value": {"get_attr": ["a", "value"]}}}},))
    executor.call(stack, "setParameters", ({"size": 5},))
    executor.call(stack, "push")
    first = values.thaw(executor.call(stack, "output"))["a"]
    executor.call(stack, "updateTemplate", ({"resources": {
        "b": {"type": "OS::Heat::RandomString", "properties": {"length": 6}}},
        "outputs": {"b": {"value": {"get_attr": ["b", "value"]}}}},))
    executor.call(stack, "push")

    outputs = values.thaw(executor.call(stack, "output"))
    assert outputs["a"] == first and len(first) == 5 and len(outputs["b"]) == 6
    assert cloud.get("s2").status == "UPDATE_COMPLETE"

    # A new object for the same stack reads template and parameters from the cloud.
    _, again = make_object("io.murano.system.HeatStack", {"cloud": cloud}, name="s2")
    template = values.thaw(executor.call(again, "current"))
    assert sorted(template["resources"]) == ["a", "b"]
    assert values.thaw(executor.call(again, "parameters")) == {"size": 5}
    executor.call(again, "delete")
    assert cloud.get("s2") is None
    assert executor.call(again, "current") == {}


def test_push_without_changes_does_not_touch_the_cloud(cloud, make_object):
    executor, stack = make_object("io.murano.system.HeatStack", {"cloud": cloud}, name="s3")
    executor.call(stack, "updateTemplate", ({"resources": {
        "a": {"type": "OS::Heat::RandomString"}}},))
    executor.call(stack, "push")
    updated = cloud.get("s3").updated
    executor.call(stack, "updateTemplate", ({"resources": {
        "a": {"type": "OS::Heat::RandomString"}}},))
    executor.call(stack, "push")
    assert cloud.get("s3").updated == updated
    executor.call(stack, "delete")


def test_current_is_copied_once_per_change_and_what_is_set_is_pushed(cloud, make_object):
    """Reading, editing and setting the template back, as each instance does when it is
    removed, copies only what changed; the cloud gets the edited template."""
    executor, stack = make_object("io.murano.system.HeatStack", {"cloud": cloud}, name="s6")
    executor.call(stack, "updateTemplate", ({"resources": {
        name: {"type": "OS::Heat::RandomString", "properties": {"length": 4}}
        for name in ("a", "b", "c")}},))
    current = executor.call(stack, "current")
    assert executor.call(stack, "current") is current
    edited = values.freeze({**current, "resources": {
        k: v for k, v in current["resources"].items() if k != "b"}})
    executor.call(stack, "setTemplate", (edited,))
    assert executor.call(stack, "current") is edited
    assert executor.call(stack, "current")["resources"]["a"] is current["resources"]["a"]
    executor.call(stack, "push")
    assert sorted(cloud.get("s6").template["resources"]) == ["a", "c"]
    executor.call(stack, "updateTemplate", ({"resources": {"d": {
        "type": "OS::Heat::RandomString"}}},))
    assert sorted(executor.call(stack, "current")["resources"]) == ["a", "c", "d"]
    executor.call(stack, "delete")


def test_outputs_read_again_unchanged_are_the_value_made_before() -> None:
    """Each server of a big stack reads the outputs of all of them: made once a change."""
    state = _State("outputs", None, None)
    first = state.frozen_outputs({"a": [1, 2], "b": None})
    assert state.frozen_outputs({"a": [1, 2], "b": None}) is first
    changed = state.frozen_outputs({"a": [1, 3], "b": None})
    assert changed is not first and values.thaw(changed) == {"a": [1, 3], "b": None}


def test_update_template_refuses_other_versions(cloud, make_object):
    executor, stack = make_object("io.murano.system.HeatStack", {"cloud": cloud}, name="s4")
    with pytest.raises(HeatStackError, match="2013-05-23"):
        executor.call(stack, "updateTemplate", ({"heat_template_version": "2018-08-31"},))


def test_merge_is_deep_and_joins_lists_without_repeats():
    base = {"r": {"x": {"p": {"l": [1, 2], "s": "a"}}}, "o": {}}
    patch = {"r": {"x": {"p": {"l": [2, 3], "s": "b"}}, "y": {}}}
    assert merge(base, patch) == {"r": {"x": {"p": {"l": [1, 2, 3], "s": "b"}}, "y": {}},
                                  "o": {}}
    assert base["r"]["x"]["p"]["l"] == [1, 2]


@pytest.mark.parametrize(("given", "expected"), [
    ("murano-env-1", "murano-env-1"), ("murano-My Env!", "murano-My-Env"), ("1abc", "s-1abc")])
def test_stack_names_are_made_valid(given, expected):
    assert stack_name(given) == expected


def test_the_next_run_pushes_a_stack_whose_last_push_failed(cloud, make_object):
    """A stack whose last operation failed does not hold its template: a later run
    (a new object, the same template) sends it again, as Heat retries the failed
    resources, instead of taking it as in place and waiting for servers never made."""
    failing = {"resources": {"vm": {"type": "OS::Nova::Server", "properties": {
        "flavor": "m1.small", "image": "no-such-image"}}}}
    executor, stack = make_object("io.murano.system.HeatStack", {"cloud": cloud}, name="s5")
    executor.call(stack, "updateTemplate", (failing,))
    with pytest.raises(StackFailed, match="no-such-image"):
        executor.call(stack, "push")
    failed = cloud.get("s5")
    assert failed.failed

    executor, again = make_object("io.murano.system.HeatStack", {"cloud": cloud}, name="s5")
    executor.call(again, "updateTemplate", (failing,))
    with pytest.raises(StackFailed, match="no-such-image"):
        executor.call(again, "push")
    assert cloud.get("s5").updated != failed.updated
    executor.call(again, "delete")
    assert cloud.get("s5") is None
