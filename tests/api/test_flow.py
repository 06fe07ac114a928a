"""The whole path with python-muranoclient's ``murano`` command and plain HTTP."""

from __future__ import annotations

import configparser
import json
import random
import re
import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from murano_engine.api.catalog import pack_folder
from murano_engine.clouds.local.sandbox import missing_for_namespaces
from murano_engine.engine.config import load_config
from murano_engine.messaging.identities import (
    BrokerIdentities,
    identity_name,
    result_exchange_name,
)
from tests.api.conftest import PACKAGES
from tests.apps import kv_nodes


def _ids(text: str) -> list[str]:
    return re.findall(r"\b[0-9a-f]{32}\b", text)


KV = Path(__file__).resolve().parents[2] / "dsl_packages" / "io.murano.apps.linux.ReplicatedKV"
KV_CLASS = "io.murano.apps.linux.ReplicatedKV"


def _ids(text: str) -> list[str]:
    return re.findall(r"\b[0-9a-f]{32}\b", text)


def _free_base_port(count: int) -> int:
    """``count`` consecutive free loopback ports (the key-value nodes listen on them)."""
    for _ in range(50):
        base = random.randrange(20000, 60000)
        sockets = []
        try:
            for port in range(base, base + count):
                sockets.append(socket.socket())
                sockets[-1].bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    pytest.skip("no free loopback ports for the key-value nodes")


def _wait_for(check, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return value


def _identities() -> BrokerIdentities:
    identities = BrokerIdentities.from_config(load_config(None, environ={}))
    assert identities is not None
    return identities


def _broker_users(env_id: str) -> list[str]:
    """The broker users of the environment's servers that exist now."""
    return [u for u in _identities().users() if u.startswith(identity_name(f"e{env_id}-h"))]


def _reports(api, env_id: str, task_id: str) -> list[str]:
    return [r["text"] for r in api.ok(
        "GET", f"/v1/environments/{env_id}/deployments/{task_id}")["reports"]]


@pytest.mark.skipif(shutil.which("python3") is None or sys.platform != "linux"
                    or bool(missing_for_namespaces()),
                    reason="the local cloud's sandboxed Linux guests need python3, Linux, "
                           "root and namespaces")
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_linux_app_deploy_reports_action_delete(start_api, request, tmp_path, backend):
    """The replicated key-value store through the API on the sandboxed local cloud, then deleted."""
    database = request.getfixturevalue("pg_database") if backend == "postgresql" else None
    api = start_api(database, environment_class="io.murano.Environment",
                    sections={"local_cloud": {"state_dir": str(tmp_path / "cloud")}})
    cloud = tmp_path / "cloud" / "projects" / "proj-a"  # each project has a cloud of its own
    base = _free_base_port(3)
    archive = tmp_path / "ReplicatedKV.zip"
    archive.write_bytes(pack_folder(KV))
    server_ids: list[str] = []
    networks: set[str] = set()
    try:
        api.murano("category-create", "Testing", token="tok-admin")
        imported = api.murano("package-import", "-c", "Testing", "--", str(archive))
        assert KV_CLASS in imported.stdout
        package_id = _ids(api.murano("package-list", "--search", "key-value").stdout)[0]
        api.murano("package-update", package_id, "--is-public", "true", token="tok-admin")
        shown = api.murano("package-show", package_id).stdout
        assert KV_CLASS in shown and "Testing" in shown
        api.murano("package-update", package_id, "--tags", "demo", "extra")
        assert api.ok("GET", "/v1/catalog/packages?tag=extra")["packages"][0]["id"] == \
            package_id
        assert api.ok("GET", "/v1/catalog/packages?category=Testing&type=application",
                      token="tok-b")["packages"][0]["is_public"] is True
        assert [p["id"] for p in api.ok(
            "GET", f"/v1/catalog/packages?class_name={KV_CLASS}&tag=demo")["packages"]] == \
            [package_id]
        assert api.ok("GET", "/v1/catalog/packages?tag=no-such-tag")["packages"] == []

        env_id = _ids(api.murano("environment-create", "kv-env").stdout)[0]
        model = api.ok("GET", f"/v1/environments/{env_id}/model/")
        assert model["?"]["type"] == "io.murano.Environment"
        network = model["defaultNetworks"]["environment"]
        assert network["?"]["type"] == "io.murano.resources.NeutronNetwork"
        assert network["name"] == "kv-env-network" and model["defaultNetworks"]["flat"] is None
        session_id = _ids(api.murano("environment-session-create", env_id).stdout)[0]
        patch = [{"op": "add", "path": "/-", "value": {
            "?": {"id": "===id1===", "type": KV_CLASS}, "name": "kv", "nodeCount": 2,
            "basePort": base, "image": "debian-12", "flavor": "m1.small"}}]
        api.murano("environment-apps-edit", "--session-id", session_id, env_id,
                   stdin=json.dumps(patch))
        api.murano("environment-deploy", "--session-id", session_id, env_id)
        env = api.wait_env(env_id, timeout=180, version=1)
        task_id = api.ok("GET", f"/v1/environments/{env_id}/deployments")[
            "deployments"][0]["id"]
        texts = _reports(api, env_id, task_id)
        assert env["status"] == "ready", texts
        assert env["version"] == 1
        assert texts[0] == "Action deploy is scheduled" and texts[-1] == "Deployment finished"
        for stage in range(1, 7):
            assert any(f"kv - stage {stage}/6" in t for t in texts), (stage, texts)
        assert any("read back from 1 replica(s)" in t for t in texts)
        assert "success" in api.murano("deployment-list", env_id).stdout

        # each node in its sandbox, on its own address on the environment's network
        app = env["services"][0]
        master, replica = nodes = kv_nodes.nodes(app, sandboxed=True)
        server_ids = [n.server_id for n in nodes]
        networks = kv_nodes.network_ids(cloud, server_ids)
        assert len(networks) == 1 and master.ip != replica.ip
        assert app["masterNode"] == "kv-1" and app["masterAddress"] == f"{master.ip}:{base}"
        assert len(app["servers"]) == 2
        assert len(_broker_users(env_id)) == 2, "each server has a broker user of its own"
        conf = configparser.ConfigParser(interpolation=None)
        conf.read(cloud / "servers" / server_ids[0] / "agent.conf")
        results = conf.get("rabbitmq", "result_routing_key")
        assert master.status()["role"] == "master"
        status = replica.status()
        assert status["role"] == "replica" and status["master"] == app["masterAddress"]
        assert status["sync_error"] is None
        # the replica reaches the master over the network, not on its own loopback
        assert replica.request("/status", address=app["masterAddress"])[0] == 200
        assert replica.request("/status", address=f"127.0.0.1:{base}", timeout=1)[0] == 0
        assert [len(kv_nodes.sandbox_kv_pids(n)) for n in nodes] == [1, 1]

        # scaleTo, the application's public action: a third node joins the master
        shown_env = api.murano("environment-show", env_id).stdout
        assert f"{app['?']['id']}_scaleTo" in shown_env
        called = api.murano("environment-action-call", env_id, "--action-id",
                            f"{app['?']['id']}_scaleTo", "--arguments", "nodeCount=3").stdout
        action_task = _ids(called)[-1]
        result = _wait_for(lambda: "isException" in (out := api.murano(
            "environment-action-get-result", env_id, "--task-id", action_task).stdout)
            and out, "the action's result", 180)
        assert "'isException': False" in result, result
        scaled = api.wait_env(env_id, timeout=180)
        assert scaled["status"] == "ready"
        assert len(scaled["services"][0]["servers"]) == 3
        assert scaled["services"][0]["nodeCount"] == 3
        assert any("read back from 2 replica(s)" in t
                   for t in _reports(api, env_id, action_task))
        nodes = kv_nodes.nodes(scaled["services"][0], sandboxed=True)
        assert [n.server_id for n in nodes[:2]] == server_ids
        server_ids = [n.server_id for n in nodes]
        assert kv_nodes.network_ids(cloud, server_ids) == networks
        assert len({n.ip for n in nodes}) == 3
        assert nodes[2].status()["master"] == app["masterAddress"]
        assert [len(kv_nodes.sandbox_kv_pids(n)) for n in nodes] == [1, 1, 1]
        sandbox_pids = [p for n in nodes for p in kv_nodes.netns.pids(n.namespace)]
        assert len(_broker_users(env_id)) == 3

        api.murano("environment-delete", "kv-env")
        _wait_for(lambda: not api.ok("GET", "/v1/environments")["environments"],
                  "the environment to be deleted", 120)
        # The deletion ends once its servers are released: nothing of them runs on.
        assert kv_nodes.alive(sandbox_pids) == []
        assert kv_nodes.namespaces_left(server_ids, networks) == []
        servers = cloud / "servers"
        assert not servers.exists() or not any(servers.iterdir()), "a server sandbox is left"
        assert _broker_users(env_id) == [], "a server's broker user is left"
        assert not [e for e in _identities().api.request("GET", "/api/exchanges/%2F")
                    if e["name"] == result_exchange_name(results)], "a result exchange is left"
        api.murano("package-delete", package_id)
        assert api.ok("GET", "/v1/catalog/packages")["packages"] == []
    finally:  # only when an assertion failed first
        kv_nodes.force_cleanup(server_ids, networks)


def test_echo_action_and_static_action(start_api):
    """The small test package: an action with arguments and a static action, by the CLI."""
    api = start_api()
    api.ok("POST", "/v1/catalog/packages", files={"p": ("p.zip", _zip())})
    env = api.ok("POST", "/v1/environments", json={"name": "env1"})
    env_id = env["id"]
    session_id = api.ok("POST", f"/v1/environments/{env_id}/configure")["id"]
    api.ok("POST", f"/v1/environments/{env_id}/services",
           headers={"X-Configuration-Session": session_id},
           json={"?": {"id": "e1", "type": "com.example.apitest.Echo"}, "name": "one"})
    api.ok("POST", f"/v1/environments/{env_id}/sessions/{session_id}/deploy")
    app = api.wait_env(env_id)["services"][0]
    assert app["greeting"] == "hello from one"
    task_id = api.ok("GET", f"/v1/environments/{env_id}/deployments")["deployments"][0]["id"]
    assert api.ok("GET", f"/v1/environments/{env_id}/lastStatus")["lastStatuses"] == {
        app["?"]["id"]: None}
    assert _reports(api, env_id, task_id)[-1] == "Deployment finished"

    called = api.murano("environment-action-call", env_id, "--action-id",
                        f"{app['?']['id']}_greet", "--arguments", "who=bob").stdout
    action_task = _ids(called)[-1]
    out = _wait_for(lambda: "greets" in (text := api.murano(
        "environment-action-get-result", env_id, "--task-id", action_task).stdout) and text,
        "the action's result", 20)
    assert "one greets bob" in out
    assert api.wait_env(env_id)["services"][0]["greeting"] == "one greets bob"
    static = api.murano("static-action-call", "com.example.apitest.Echo", "add",
                        "--arguments", "a=2", "b=40").stdout
    assert "Static action result: 42" in static


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
    return pack_folder(PACKAGES / "apitest")
