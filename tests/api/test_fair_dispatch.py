"""murano-api running deployments in its own threads: a project with many deployments
does not keep another's waiting behind all of them."""

from __future__ import annotations

import uuid
from typing import Any

from murano_engine.api.catalog import pack_folder
from tests.api.conftest import PACKAGES
from tests.api.test_worker_journal import _wait


def _deploy_stepper(api: Any, token: str, steps: int) -> str:
    """Deploy an environment of one Stepper (one-second steps) as ``token``'s project;
    the deployment's URL path."""
    env = api.ok("POST", "/v1/environments", token=token,
                 json={"name": f"fair-{uuid.uuid4().hex[:6]}"})
    base = f"/v1/environments/{env['id']}"
    sid = api.ok("POST", f"{base}/configure", token=token)["id"]
    api.ok("POST", f"{base}/services", token=token, headers={"X-Configuration-Session": sid},
           json={"?": {"type": "com.example.apitest.Stepper"}, "name": "stepper",
                 "steps": steps, "pause": 1})
    api.ok("POST", f"{base}/sessions/{sid}/deploy", token=token)
    task_id = api.ok("GET", f"{base}/deployments", token=token)["deployments"][0]["id"]
    return f"{base}/deployments/{task_id}"


def _first_step_at(api: Any, token: str, deployment: str) -> str | None:
    """When the deployment reported its first step (None before)."""
    steps = [r["created"] for r in api.ok("GET", deployment, token=token)["reports"]
             if " step " in r["text"]]
    return steps[0] if steps else None


def test_a_project_s_deployment_runs_before_another_s_third(start_api):
    # Two threads run deployments. Project B's three come first; project A's then waits
    # for one of B's to end (the first, after 2 s), not for all of B's before it (first
    # come, first served: B's third would take that thread, and A wait for B's second).
    api = start_api(engine={"task_workers": "2"})
    for token in ("tok-a", "tok-b"):  # each project its own copy of the package
        api.ok("POST", "/v1/catalog/packages", token=token,
               files={"p": ("p.zip", pack_folder(PACKAGES / "apitest"))})
    b = [_deploy_stepper(api, "tok-b", steps=steps) for steps in (2, 6, 1)]
    _wait("B's first two running", lambda: all(_first_step_at(api, "tok-b", d) for d in b[:2]))
    a = _deploy_stepper(api, "tok-a", steps=1)
    a_started = _wait("A's deployment running", lambda: _first_step_at(api, "tok-a", a))
    b_third = _wait("B's third running", lambda: _first_step_at(api, "tok-b", b[2]))
    assert a_started < b_third
