"""A failed deployment's MuranoPL error reaches the API's users with its MuranoPL stack."""

from __future__ import annotations

from typing import Any

import pytest

from murano_engine.api.catalog import pack_folder
from tests.api.conftest import PACKAGES


def _fail_deploy(api: Any, app: dict[str, Any]) -> tuple[dict, list[dict]]:
    """Deploy an environment holding ``app``; the failed deployment and its reports."""
    env_id = api.ok("POST", "/v1/environments", json={"name": "failing"})["id"]
    session_id = api.ok("POST", f"/v1/environments/{env_id}/configure")["id"]
    api.ok("POST", f"/v1/environments/{env_id}/services",
           headers={"X-Configuration-Session": session_id}, json=app)
    api.ok("POST", f"/v1/environments/{env_id}/sessions/{session_id}/deploy")
    assert api.wait_env(env_id, version=0, states=("deploy failure",))["status"] == \
        "deploy failure"
    (task,) = api.ok("GET", f"/v1/environments/{env_id}/deployments")["deployments"]
    reports = api.ok("GET", f"/v1/environments/{env_id}/deployments/{task['id']}")["reports"]
    return task, reports


@pytest.mark.parametrize(("app", "message", "frame"), [
    ({"name": "one", "fail": True}, "one was asked to fail",
     "com.example.apitest com.example.apitest.Echo.deploy at "),
    ({"name": "one", "delay": "soon"}, "[com.example.apitest.Echo.delay] value 'soon' is not "
     "an integer", "com.example.apitest com.example.apitest.Echo.delay (property contract) at "),
], ids=["thrown", "refused-by-a-contract"])
def test_a_failed_deployment_carries_its_murano_stack(start_api, app, message, frame):
    api = start_api()
    api.ok("POST", "/v1/catalog/packages",
           files={"p": ("p.zip", pack_folder(PACKAGES / "apitest"))})
    task, reports = _fail_deploy(
        api, {"?": {"id": "e1", "type": "com.example.apitest.Echo"}, **app})
    failure = task["result"]["result"]
    assert task["result"]["isException"] is True and failure["message"] == message
    assert frame in failure["traceback"] and "Echo.yaml:" in failure["traceback"]
    errors = [r for r in reports if r["level"] == "error"]
    assert [r["text"] for r in errors] == [message, "Deployment finished with errors"]
    assert errors[0]["details"] == failure["traceback"]  # the status shows the stack too
