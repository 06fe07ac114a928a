"""The whole path with python-muranoclient's ``murano`` command and plain HTTP."""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.api.conftest import PACKAGES


def _ids(text: str) -> list[str]:
    return re.findall(r"\b[0-9a-f]{32}\b", text)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_catalog_environment_deploy_action_delete(start_api, request, backend):
    database = request.getfixturevalue("pg_database") if backend == "postgresql" else None
    api = start_api(database)
    api.murano("category-create", "Testing")
    imported = api.murano("package-import", "--is-public", "-c", "Testing", "--",
                          str(PACKAGES / "apitest"))
    assert "com.example.apitest" in imported.stdout
    listed = api.murano("package-list", "--search", "echo")
    package_id = _ids(listed.stdout)[0]
    shown = api.murano("package-show", package_id).stdout
    assert "com.example.apitest.Echo" in shown and "Testing" in shown
    api.murano("package-update", package_id, "--tags", "demo", "extra")
    assert api.ok("GET", "/v1/catalog/packages?tag=extra")["packages"][0]["id"] == package_id
    assert api.ok("GET", "/v1/catalog/packages?category=Testing&type=application",
                  token="tok-b")["packages"][0]["is_public"] is True

    env_id = _ids(api.murano("environment-create", "env1").stdout)[0]
    session_id = _ids(api.murano("environment-session-create", env_id).stdout)[0]
    patch = [{"op": "add", "path": "/-", "value": {
        "?": {"id": "===id1===", "type": "com.example.apitest.Echo"}, "name": "one"}}]
    api.murano("environment-apps-edit", "--session-id", session_id, env_id,
               stdin=json.dumps(patch))
    api.murano("environment-deploy", "--session-id", session_id, env_id)
    env = api.wait_env(env_id)
    assert env["status"] == "ready" and env["version"] == 1
    app = env["services"][0]
    assert app["greeting"] == "hello from one"

    deployments = api.murano("deployment-list", env_id).stdout
    assert "success" in deployments
    task_id = api.ok("GET", f"/v1/environments/{env_id}/deployments")["deployments"][0]["id"]
    texts = [r["text"] for r in api.ok(
        "GET", f"/v1/environments/{env_id}/deployments/{task_id}")["reports"]]
    assert texts[0] == "Action deploy is scheduled" and texts[-1] == "Deployment finished"
    assert api.ok("GET", f"/v1/environments/{env_id}/lastStatus")["lastStatuses"] == {
        app["?"]["id"]: None}

    called = api.murano("environment-action-call", env_id, "--action-id",
                        f"{app['?']['id']}_greet", "--arguments", "who=bob").stdout
    action_task = _ids(called)[-1]
    deadline = time.monotonic() + 20
    while "greets" not in (out := api.murano("environment-action-get-result", env_id,
                                             "--task-id", action_task).stdout):
        assert time.monotonic() < deadline, out
        time.sleep(0.2)
    assert "one greets bob" in out
    assert api.wait_env(env_id)["services"][0]["greeting"] == "one greets bob"
    static = api.murano("static-action-call", "com.example.apitest.Echo", "add",
                        "--arguments", "a=2", "b=40").stdout
    assert "Static action result: 42" in static

    api.murano("environment-delete", "env1")
    deadline = time.monotonic() + 20
    while api.ok("GET", "/v1/environments")["environments"]:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    api.murano("package-delete", package_id)
    assert api.ok("GET", "/v1/catalog/packages")["packages"] == []


def test_templates_and_model(start_api):
    api = start_api()
    api.ok("POST", "/v1/catalog/packages", files={"p": ("p.zip", _zip())})
    template = api.ok("POST", "/v1/templates", json={"name": "tpl", "is_public": True})
    app = {"?": {"id": "a1", "type": "com.example.apitest.Echo"}, "name": "t"}
    api.ok("POST", f"/v1/templates/{template['id']}/services", json=app)
    assert "tpl" in api.murano("env-template-list").stdout
    created = api.ok("POST", f"/v1/templates/{template['id']}/create-environment",
                     json={"name": "from-tpl"})
    env_id, session_id = created["environment_id"], created["session_id"]
    header = {"X-Configuration-Session": session_id}
    services = api.ok("GET", f"/v1/environments/{env_id}/services", headers=header)
    assert services[0]["name"] == "t" and services[0]["?"]["id"] != "a1"
    renamed = api.ok("PATCH", f"/v1/environments/{env_id}/model/", headers=header,
                     json=[{"op": "replace", "path": "/name", "value": "renamed"}])
    assert renamed["name"] == "renamed"
    assert api.ok("GET", f"/v1/environments/{env_id}/model/name", headers=header) == "renamed"
    api.ok("POST", f"/v1/environments/{env_id}/sessions/{session_id}/deploy")
    assert api.wait_env(env_id)["services"][0]["greeting"] == "hello from t"
    clone = api.ok("POST", f"/v1/templates/{template['id']}/clone", token="tok-b",
                   json={"name": "mine"})
    assert clone["tenant_id"] == "proj-b" and len(clone["services"]) == 1
    assert api.request("DELETE", f"/v1/templates/{template['id']}", "tok-b").status_code == 404
    api.ok("DELETE", f"/v1/templates/{template['id']}")
    spec = api.ok("GET", "/v1/openapi.json", token="")
    assert "/v1/environments/{env_id}/sessions/{session_id}/deploy" in spec["paths"]


def _zip() -> bytes:
    from murano_engine.api.catalog import pack_folder

    return pack_folder(PACKAGES / "apitest")
