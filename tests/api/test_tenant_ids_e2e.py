"""Two projects on one murano-api, the local cloud and sandboxes: project B deploys a
server; project A writes B's environment and instance ids into its own model. The API
refuses each claim, and nothing of B changes: its server's broker user, password and
queue stay, and B's deployment runs again on the same server."""

from __future__ import annotations

import shutil
import sys
import time
import uuid
from typing import Any
from urllib.parse import quote

import pytest

from murano_engine.api.catalog import pack_folder
from murano_engine.clouds.local.sandbox import missing_for_namespaces
from murano_engine.engine.config import load_config
from murano_engine.messaging.management import ManagementApi, management_url
from tests.api.test_flow import KV, KV_CLASS

SESSION = "X-Configuration-Session"

pytestmark = pytest.mark.skipif(
    shutil.which("python3") is None or sys.platform != "linux"
    or bool(missing_for_namespaces()), reason="needs the sandboxed local cloud")


def _instances(model: Any) -> list[dict]:
    """The servers (instance objects) of the model's key-value store."""
    (store,) = model["services"]
    return list(store["servers"])


def _deploy(api, token: str, base: str, sid: str, version: int) -> None:
    """Deploy the session and wait for the deployment to end (ready)."""
    api.ok("POST", f"{base}/sessions/{sid}/deploy", token)
    deadline = time.monotonic() + 180
    while True:
        env = api.ok("GET", base, token)
        if env["status"] in ("ready", "deploy failure") and env["version"] >= version:
            break
        assert time.monotonic() < deadline, f"the deployment did not end: {env['status']}"
        time.sleep(0.2)
    assert env["status"] == "ready", api.ok("GET", f"{base}/deployments", token)


def test_a_project_cannot_reach_another_projects_server_by_its_ids(start_api, tmp_path):
    api = start_api(environment_class="io.murano.Environment",
                    sections={"local_cloud": {"state_dir": str(tmp_path / "cloud")}})
    management = ManagementApi(management_url(load_config(None, environ={})) or "")
    api.ok("POST", "/v1/catalog/packages", "tok-b", files={"p": ("kv.zip", pack_folder(KV))})
    b_env = api.ok("POST", "/v1/environments", "tok-b", json={"name": "b-tenant"})["id"]
    b_base = f"/v1/environments/{b_env}"
    sid = api.ok("POST", f"{b_base}/configure", "tok-b")["id"]
    api.ok("POST", f"{b_base}/services", "tok-b", headers={SESSION: sid},
           json={"?": {"id": uuid.uuid4().hex, "type": KV_CLASS}, "name": "kv",
                 "nodeCount": 1, "basePort": 29970, "image": "debian-12",
                 "flavor": "m1.small"})
    try:
        _deploy(api, "tok-b", b_base, sid, 1)
        (instance,) = _instances(api.ok("GET", f"{b_base}/model/", "tok-b"))
        b_instance = instance["?"]["id"]
        queue = f"e{b_env}-h{b_instance}".lower()
        user = f"/api/users/{quote('murano-agent-' + queue, safe='')}"
        before = management.request("GET", user)

        a_env = api.ok("POST", "/v1/environments", "tok-a", json={"name": "a-tenant"})["id"]
        a_base = f"/v1/environments/{a_env}"
        a_sid = api.ok("POST", f"{a_base}/configure", "tok-a")["id"]
        claims = [
            {"?": {"id": b_env, "type": KV_CLASS}, "name": "claims-b-environment"},
            {"?": {"id": uuid.uuid4().hex, "type": KV_CLASS}, "name": "claims-b-server",
             "instance": {"?": {"id": b_instance, "type": instance["?"]["type"]},
                          "name": instance.get("name")}},
        ]
        for claim, claimed in zip(claims, (b_env, b_instance), strict=True):
            refused = api.request("POST", f"{a_base}/services", "tok-a",
                                  headers={SESSION: a_sid}, json=claim)
            assert refused.status_code == 403, refused.text
            assert f"object id {claimed!r} belongs to another environment" in refused.text
        assert api.ok("GET", f"{a_base}/services", "tok-a", headers={SESSION: a_sid}) == []

        after = management.request("GET", user)
        assert after["password_hash"] == before["password_hash"]  # not minted again
        assert management.request("GET", f"/api/queues/%2F/{quote(queue, safe='')}")
        # B's server still takes B's plans: a deployment again, on the same server
        again = api.ok("POST", f"{b_base}/configure", "tok-b")["id"]
        _deploy(api, "tok-b", b_base, again, 2)
        assert [i["?"]["id"] for i in _instances(
            api.ok("GET", f"{b_base}/model/", "tok-b"))] == [b_instance]
    finally:
        assert api.request("DELETE", b_base, "tok-b").status_code == 200
        deadline = time.monotonic() + 120
        while api.ok("GET", "/v1/environments", "tok-b")["environments"]:
            assert time.monotonic() < deadline, "B's environment was not deleted"
            time.sleep(0.5)
    assert management.request("GET", user, missing_ok=True) is None  # gone with B
