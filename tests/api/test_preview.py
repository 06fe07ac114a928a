"""``POST /v1/environments/{id}/sessions/{sid}/preview``: a session's plan, from a worker.

HelloWeb in a session of a murano-api running tasks in its own threads: the
preview lists its servers, network, ports and plans, and the session, the
environment, its deployments and the project's cloud are as they were. Through
a worker on RabbitMQ, a hostile package's preview ends at the deploy's step
budget, as the deploy of the same session then does.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

from murano_engine.api.catalog import pack_folder
from tests.api.conftest import PACKAGES, ApiServer
from tests.api.test_hygiene import _wait_for_worker
from tests.databases import throwaway_pg_database

REPO = Path(__file__).resolve().parents[2]
HELLO = REPO / "dsl_packages" / "io.murano.apps.linux.HelloWeb"


def _session_with(api: ApiServer, name: str, service: dict[str, Any]) -> tuple[str, str]:
    env_id = api.ok("POST", "/v1/environments", json={"name": name})["id"]
    session_id = api.ok("POST", f"/v1/environments/{env_id}/configure")["id"]
    api.ok("POST", f"/v1/environments/{env_id}/services", json=service,
           headers={"X-Configuration-Session": session_id})
    return env_id, session_id


def hello_web_service() -> dict[str, Any]:
    """examples/hello-web.json's application, with ids of its own."""
    text = (REPO / "examples" / "hello-web.json").read_text()
    for old in set(re.findall(r"[0-9a-f]{32}", text)):
        text = text.replace(old, uuid.uuid4().hex)
    return json.loads(text)["applications"][0]


def test_a_preview_lists_what_deploying_the_session_makes_and_changes_nothing(
        start_api, tmp_path):
    api = start_api(environment_class="io.murano.Environment",
                    sections={"local_cloud": {"state_dir": str(tmp_path / "cloud")}})
    api.ok("POST", "/v1/catalog/packages", files={"p": ("p.zip", pack_folder(HELLO))})
    env_id, session_id = _session_with(api, "web", hello_web_service())
    plan = api.ok("POST", f"/v1/environments/{env_id}/sessions/{session_id}/preview")
    assert plan["outcome"] == "complete" and plan["environment"]["id"] == env_id
    (stack,) = plan["stacks"]
    types = sorted(r["type"] for r in stack["added"])
    assert types.count("OS::Nova::Server") == 2 and types.count("OS::Neutron::Port") == 2
    assert "OS::Neutron::Net" in types and "OS::Neutron::Subnet" in types
    assert [s["name"] for s in plan["servers"]["made"]] == ["hello-1", "hello-2"]
    assert [(p["server"], p["name"]) for p in plan["plans"] if p["server"] == "hello-2"] == [
        ("hello-2", "Install the hello-web service"),
        ("hello-2", "Configure the hello-web service")]
    assert plan["reports"][-1]["text"].endswith("is deployed (2 units)")
    # nothing changed: the session is open, nothing deployed or deploying, no cloud
    assert api.ok("GET", f"/v1/environments/{env_id}/sessions/{session_id}")["state"] == \
        "opened"
    assert api.ok("GET", f"/v1/environments/{env_id}/deployments")["deployments"] == []
    assert api.ok("GET", f"/v1/environments/{env_id}")["status"] == "pending"
    assert not (tmp_path / "cloud" / "projects" / "proj-a" / "stacks").exists()
    # the same preview again: what is deployed has not changed, nor what it would make
    again = api.ok("POST", f"/v1/environments/{env_id}/sessions/{session_id}/preview")
    assert [s["name"] for s in again["servers"]["made"]] == ["hello-1", "hello-2"]
    # a session discarded is previewed no more
    api.request("DELETE", f"/v1/environments/{env_id}/sessions/{session_id}")
    gone = api.request("POST", f"/v1/environments/{env_id}/sessions/{session_id}/preview")
    assert gone.status_code == 404, gone.text


def test_a_hostile_preview_ends_at_the_budget_its_deploy_ends_at(start_api):
    with throwaway_pg_database() as database:
        api = start_api(database, broker=True, engine={"task_step_limit": "200000"})
        api.start_worker()
        api.ok("POST", "/v1/catalog/packages", files={"p": ("p.zip", pack_folder(
            PACKAGES / "apitest"))})
        _wait_for_worker(api)
        env_id, session_id = _session_with(api, "spin", {
            "?": {"id": uuid.uuid4().hex, "type": "com.example.apitest.Stepper"},
            "name": "spin", "steps": 1, "pause": 0, "busy": 1000})
        plan = api.ok("POST", f"/v1/environments/{env_id}/sessions/{session_id}/preview")
        assert plan["outcome"] == "failed", plan
        assert plan["failure"]["names"] == ["murano.dsl.exceptions.StepBudgetExceededError"]
        assert "step budget of 200000 steps is spent" in plan["failure"]["message"]
        assert api.ok("GET", f"/v1/environments/{env_id}/deployments")["deployments"] == []

        api.ok("POST", f"/v1/environments/{env_id}/sessions/{session_id}/deploy")
        env = api.wait_env(env_id, ("deploy failure",), timeout=60)
        (deployment,) = api.ok("GET", f"/v1/environments/{env_id}/deployments")["deployments"]
        result = deployment["result"]["result"]
        assert env["status"] == "deploy failure"
        assert result["names"] == plan["failure"]["names"]
        assert "step budget of 200000 steps is spent" in result["message"]
        api.stop()
