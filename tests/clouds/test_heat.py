"""The heatclient backend against a stub Heat v1 API on loopback."""

from __future__ import annotations

import pytest
import yaml

from murano_engine.clouds import open_cloud
from murano_engine.clouds.base import (
    CloudUnavailable,
    StackFailed,
    StackTimeout,
    TemplateError,
    push_stack,
    remove_stack,
)
from murano_engine.clouds.heat import HeatStacks


def template(**outputs: str) -> dict:
    return {
        "heat_template_version": "2013-05-23",
        "resources": {"net": {"type": "OS::Neutron::Net"}},
        "outputs": {key: {"value": value} for key, value in outputs.items()},
    }


@pytest.fixture
def heat(fake_heat, clock):
    service = open_cloud(
        {"heat": {"url": fake_heat.endpoint, "token": fake_heat.token, "poll_interval": "2"}}
    )
    assert isinstance(service, HeatStacks)
    yield service
    service.close()


def test_create_polls_until_complete_and_returns_outputs(heat, fake_heat, clock):
    outputs = push_stack(heat, "murano-env", template(ip="10.0.0.3"), {"flavor": "m1"})

    assert outputs == {"ip": "10.0.0.3"}
    body = fake_heat.bodies[0]
    assert body["stack_name"] == "murano-env"
    assert body["parameters"] == {"flavor": "m1"}
    assert body["disable_rollback"] is True and body["tags"] == "murano"
    assert body["timeout_mins"] == 60
    assert clock.sleeps == [2.0, 2.0]  # two IN_PROGRESS polls, then COMPLETE
    stack = heat.get("murano-env")
    assert stack.status == "CREATE_COMPLETE"
    assert stack.parameters == {"flavor": "m1"}  # OS::* parameters are dropped
    assert stack.template == template(ip="10.0.0.3")


def test_a_wait_for_outputs_only_does_not_fetch_the_template(heat, fake_heat):
    push_stack(heat, "env", template(ip="10.0.0.3"))
    fake_heat.requests.clear()

    stack = heat.wait("env", template=False)

    assert stack.outputs == {"ip": "10.0.0.3"} and stack.template is None
    assert not [path for _, path in fake_heat.requests if path.endswith("/template")]
    assert heat.wait("env").template == template(ip="10.0.0.3")
    assert [path for _, path in fake_heat.requests if path.endswith("/template")]


def test_update_waits_past_the_previous_settled_state(heat, fake_heat):
    push_stack(heat, "env", template(ip="old"))
    fake_heat.lag_polls = 2  # Heat still shows CREATE_COMPLETE for two reads

    outputs = push_stack(heat, "env", template(ip="new"))

    assert outputs == {"ip": "new"}
    stack = heat.get("env")
    assert stack.status == "UPDATE_COMPLETE" and stack.updated is not None
    record = fake_heat.stacks["env"]
    assert ("PUT", f"/v1/{fake_heat.tenant}/stacks/env/{record['id']}") in fake_heat.requests


def test_empty_template_deletes_the_stack(heat, fake_heat):
    push_stack(heat, "env", template())

    assert push_stack(heat, "env", {"resources": {}}) == {}

    assert heat.get("env") is None
    assert "env" not in fake_heat.stacks
    assert any(method == "DELETE" for method, _ in fake_heat.requests)


def test_remove_stack_tolerates_absence(heat, fake_heat):
    push_stack(heat, "env", template())
    remove_stack(heat, "env")
    remove_stack(heat, "env")
    assert fake_heat.stacks == {}


def test_conflicts_are_retried_with_growing_pauses(heat, fake_heat, clock):
    fake_heat.conflicts = 3

    assert push_stack(heat, "env", template(a="1")) == {"a": "1"}

    assert clock.sleeps[:3] == [3.0, 6.0, 12.0]
    posts = [r for r in fake_heat.requests if r[0] == "POST"]
    assert len(posts) == 4


def test_conflicts_give_up_at_the_timeout(heat, fake_heat):
    fake_heat.conflicts = 100
    with pytest.raises(StackTimeout, match="stayed busy"):
        push_stack(heat, "env", template(), timeout=20)


def test_failure_reason_is_surfaced(heat, fake_heat):
    fake_heat.fail_with = "Resource CREATE failed: Forbidden: Quota exceeded for instances"

    with pytest.raises(StackFailed) as caught:
        push_stack(heat, "env", template())

    message = str(caught.value)
    assert "CREATE_FAILED" in message and "Quota exceeded for instances" in message
    assert caught.value.stack.status_reason.startswith("Resource CREATE failed")


def test_a_failed_stack_is_updated_on_the_next_push(heat, fake_heat):
    fake_heat.fail_with = "boom"
    with pytest.raises(StackFailed):
        push_stack(heat, "env", template())

    assert push_stack(heat, "env", template(ok="yes")) == {"ok": "yes"}


def test_wait_is_bounded_by_the_timeout(heat, fake_heat, clock):
    fake_heat.stuck = True
    heat.create("env", template())

    with pytest.raises(StackTimeout, match="env is still CREATE_IN_PROGRESS after 30 s"):
        heat.wait("env", timeout=30)
    assert sum(clock.sleeps) <= 30


def test_template_errors_come_back_as_one_clear_error(heat):
    bad = {"resources": {"vm": {"type": "Bad::Thing"}}}
    with pytest.raises(TemplateError, match="Resource vm: Unknown resource Type : Bad::Thing"):
        push_stack(heat, "env", bad)


def test_password_session_finds_heat_in_the_catalog(fake_heat, clock):
    service = open_cloud(
        {
            "heat": {
                "auth_url": f"{fake_heat.url}/identity/v3",
                "username": "demo",
                "password": "secret",
                "project_name": "demo",
            }
        }
    )
    try:
        assert push_stack(service, "env", template(x="1")) == {"x": "1"}
    finally:
        service.close()
    assert fake_heat.requests[0] == ("POST", "/identity/v3/auth/tokens")


def test_unreachable_heat_is_reported_after_retries(clock):
    service = open_cloud({"heat": {"url": "http://127.0.0.1:9/v1/t", "token": "x"}})
    try:
        with pytest.raises(CloudUnavailable, match="unreachable"):
            service.wait("env")
    finally:
        service.close()
    assert clock.sleeps == [4.0, 8.0, 16.0, 32.0]


def test_engine_stack_timeout_bounds_heat_waits_unless_heat_sets_its_own(fake_heat, clock):
    heat = {"url": fake_heat.endpoint, "token": fake_heat.token}
    service = open_cloud({"engine": {"stack_timeout": 600.0}, "heat": heat})
    fake_heat.stuck = True
    try:
        with pytest.raises(StackTimeout, match="after 600 s"):
            push_stack(service, "env", template())
    finally:
        service.close()
    assert fake_heat.bodies[0]["timeout_mins"] == 10
    own = open_cloud({"engine": {"stack_timeout": 600.0}, "heat": {**heat, "stack_timeout": 120}})
    try:
        assert own.timeout == 120
    finally:
        own.close()


def test_no_compute_sends_the_stand_ins_and_a_stacks_own_registry_wins(fake_heat, clock):
    service = open_cloud({"heat": {"url": fake_heat.endpoint, "token": fake_heat.token,
                                   "no_compute": "true"}})
    own = {"resource_registry": {"OS::Neutron::Net": "mine.yaml"}, "parameters": {"a": 1}}
    try:
        push_stack(service, "env", template(), files={"mine.yaml": "x"}, environment=own)
    finally:
        service.close()
    body = fake_heat.bodies[0]
    registry = body["environment"]["resource_registry"]
    assert registry["OS::Neutron::Net"] == "mine.yaml"
    assert body["environment"]["parameters"] == {"a": 1}
    assert registry["OS::Nova::Server"] == "murano-engine-no-compute/server.yaml"
    assert body["files"]["mine.yaml"] == "x"
    assert all(name in body["files"] for name in registry.values())
    for name in set(registry.values()) - {"mine.yaml"}:  # each a HOT template with outputs
        stand_in = yaml.safe_load(body["files"][name])
        assert str(stand_in["heat_template_version"]) == "2021-04-16" and stand_in["outputs"], name
    assert own == {"resource_registry": {"OS::Neutron::Net": "mine.yaml"}, "parameters": {"a": 1}}
