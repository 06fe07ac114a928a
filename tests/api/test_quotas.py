"""Quotas per project through murano-api and python-muranoclient's ``murano``: a project
past its environments, packages, running deployments or servers quota is refused (a 403
in Murano's error shape, or the deployment's failure), the quota and its value named,
and nothing is made; ``[quotas] overrides`` gives a project quotas of its own."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import text

from murano_engine.api import environments
from murano_engine.api.auth import Context
from murano_engine.api.catalog import pack_folder
from murano_engine.api.errors import QuotaExceeded
from murano_engine.api.quotas import hold_project
from murano_engine.backend import db
from murano_engine.engine.quotas import Quotas, QuotaTable
from tests.api.conftest import PACKAGES

SESSION = "X-Configuration-Session"


def _ids(text: str) -> list[str]:
    return re.findall(r"\b[0-9a-f]{32}\b", text)


def _refused(response: Any, name: str, limit: int, in_use: int) -> str:
    """The message of a 403 for quota ``name`` (of value ``limit``, ``in_use`` of it taken)
    in Murano's error shape."""
    assert response.status_code == 403, response.text
    body = response.json()
    assert (body["code"], body["title"]) == (403, "Forbidden") and body["explanation"]
    error = body["error"]
    assert error["type"] == "QuotaExceeded" and error["traceback"] is None
    assert error["quota"] == {"name": name, "limit": limit, "in_use": in_use}
    assert f"its {name} quota is {limit}" in error["message"], error["message"]
    return error["message"]


def _cli_refused(done: Any, name: str, limit: int) -> None:
    """A ``murano`` command that failed naming quota ``name`` and its value ``limit``."""
    assert done.returncode != 0, done.stdout
    assert f"its {name} quota is {limit}" in done.stdout + done.stderr, done.stderr


def _env_names(api: Any, token: str = "tok-a") -> list[str]:
    return sorted(e["name"] for e in api.ok("GET", "/v1/environments", token=token)
                  ["environments"])


def _until(check: Any, what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return value


def test_environments_past_the_quota_are_refused_and_not_made(start_api):
    api = start_api(sections={"quotas": {"environments": "2",
                                         "overrides": "proj-b: environments=1"}})
    first = api.ok("POST", "/v1/environments", json={"name": "one"})
    api.ok("POST", "/v1/environments", json={"name": "two"})
    message = _refused(api.request("POST", "/v1/environments", json={"name": "three"}),
                       "environments", 2, 2)
    assert message.startswith("Quota exceeded: project proj-a has 2 environment(s)")
    _cli_refused(api.murano("environment-create", "four", check=False), "environments", 2)
    template = api.ok("POST", "/v1/templates", json={"name": "tpl"})
    _refused(api.request("POST", f"/v1/templates/{template['id']}/create-environment",
                         json={"name": "five"}), "environments", 2, 2)
    assert _env_names(api) == ["one", "two"]

    # proj-b's own quota; proj-a's environments do not count for it
    api.ok("POST", "/v1/environments", token="tok-b", json={"name": "b-one"})
    _refused(api.request("POST", "/v1/environments", token="tok-b", json={"name": "b-two"}),
             "environments", 1, 1)
    assert _env_names(api, "tok-b") == ["b-one"]

    api.ok("DELETE", f"/v1/environments/{first['id']}")  # a place freed is taken again
    assert _ids(api.murano("environment-create", "three").stdout)
    assert _env_names(api) == ["three", "two"]


def test_packages_past_the_quota_are_refused_and_not_added(start_api, tmp_path):
    api = start_api(sections={"quotas": {"packages": "1"}})
    apitest, servers = tmp_path / "apitest.zip", tmp_path / "servers.zip"
    apitest.write_bytes(pack_folder(PACKAGES / "apitest"))
    servers.write_bytes(pack_folder(PACKAGES / "hot-servers"))
    assert "com.example.apitest" in api.murano("package-import", str(apitest)).stdout
    _cli_refused(api.murano("package-import", str(servers), check=False), "packages", 1)
    _refused(api.request("POST", "/v1/catalog/packages",
                         files={"p": ("servers.zip", servers.read_bytes())}),
             "packages", 1, 1)
    assert [p["fully_qualified_name"] for p in api.ok("GET", "/v1/catalog/packages")
            ["packages"]] == ["com.example.apitest"]
    # another project has its own count
    api.ok("POST", "/v1/catalog/packages", token="tok-b",
           files={"p": ("servers.zip", servers.read_bytes())})


def _deployable(api: Any, name: str, delay: int) -> tuple[str, str]:
    """An environment of one Echo taking ``delay`` seconds, and its open session."""
    env_id = api.ok("POST", "/v1/environments", json={"name": name})["id"]
    session_id = api.ok("POST", f"/v1/environments/{env_id}/configure")["id"]
    api.ok("POST", f"/v1/environments/{env_id}/services", headers={SESSION: session_id},
           json={"?": {"type": "com.example.apitest.Echo"}, "name": name, "delay": delay})
    return env_id, session_id


def test_deployments_past_the_quota_are_refused_and_not_queued(start_api):
    api = start_api(sections={"quotas": {"deployments": "1"}})
    api.ok("POST", "/v1/catalog/packages",
           files={"p": ("p.zip", pack_folder(PACKAGES / "apitest"))})
    done_id, done_session = _deployable(api, "done", 0)
    api.ok("POST", f"/v1/environments/{done_id}/sessions/{done_session}/deploy")
    assert api.wait_env(done_id, version=1)["status"] == "ready"
    # from here one deployment runs (an hour's sleep), the quota's one
    busy_id, busy_session = _deployable(api, "busy", 3600)
    api.ok("POST", f"/v1/environments/{busy_id}/sessions/{busy_session}/deploy")

    [service] = api.ok("GET", f"/v1/environments/{done_id}")["services"]
    action = next(a for a, spec in service["?"]["_actions"].items() if spec["name"] == "greet")
    message = _refused(api.request("POST", f"/v1/environments/{done_id}/actions/{action}",
                                   json={"who": "quota"}), "deployments", 1, 1)
    assert "has 1 deployment(s) running" in message
    waiting_id, waiting_session = _deployable(api, "waiting", 0)
    _cli_refused(api.murano("environment-deploy", "--session-id", waiting_session, waiting_id,
                            check=False), "deployments", 1)
    # nothing was queued: no task, the session still open, the environments as they were
    assert api.ok("GET", f"/v1/environments/{waiting_id}/deployments")["deployments"] == []
    assert api.ok("GET", f"/v1/environments/{waiting_id}/sessions/{waiting_session}"
                  )["state"] == "opened"
    assert len(api.ok("GET", f"/v1/environments/{done_id}/deployments")["deployments"]) == 1
    assert api.ok("GET", f"/v1/environments/{waiting_id}")["status"] == "pending"

    # a deletion is never refused (it frees what the project holds)
    api.murano("environment-delete", done_id)
    _until(lambda: "done" not in _env_names(api), "the environment to be deleted")
    # once the running deployment is gone, the next one is let through
    api.ok("DELETE", f"/v1/environments/{busy_id}?abandon=true")
    api.murano("environment-deploy", "--session-id", waiting_session, waiting_id)
    assert api.wait_env(waiting_id, version=1)["status"] == "ready"


def test_a_deployment_past_the_servers_quota_fails_making_no_server(start_api, tmp_path):
    cloud = tmp_path / "cloud"
    api = start_api(environment_class="io.murano.Environment",
                    sections={"local_cloud": {"state_dir": str(cloud)},
                              "quotas": {"servers": "1"}})
    own = cloud / "projects" / "proj-a"  # the project's local cloud
    archive = tmp_path / "servers.zip"
    archive.write_bytes(pack_folder(PACKAGES / "hot-servers"))
    api.murano("package-import", str(archive))
    env_id = _ids(api.murano("environment-create", "pair").stdout)[0]
    try:
        session_id = _ids(api.murano("environment-session-create", env_id).stdout)[0]
        patch = [{"op": "add", "path": "/-", "value": {
            "?": {"id": "===id1===", "type": "io.example.quota.TwoServers"}, "name": "pair"}}]
        api.murano("environment-apps-edit", "--session-id", session_id, env_id,
                   stdin=json.dumps(patch))
        api.murano("environment-deploy", "--session-id", session_id, env_id)
        env = api.wait_env(env_id, ("ready", "deploy failure"), timeout=60, version=1)
        assert env["status"] == "deploy failure"
        assert "completed_w_errors" in api.murano("deployment-list", env_id).stdout
        [task] = api.ok("GET", f"/v1/environments/{env_id}/deployments")["deployments"]
        texts = [r["text"] for r in api.ok(
            "GET", f"/v1/environments/{env_id}/deployments/{task['id']}")["reports"]]
        assert any("Quota exceeded: the servers quota is 1" in t
                   and "would take the project's servers to 2" in t for t in texts), texts
        assert "servers quota is 1" in task["result"]["result"]["message"]
        made = [p.name for kind in ("stacks", "servers") if (own / kind).is_dir()
                for p in (own / kind).iterdir()]
        assert made == []
    finally:  # (a deployment let through made two servers: they go with the environment)
        api.request("DELETE", f"/v1/environments/{env_id}")
        _until(lambda: "pair" not in _env_names(api), "the environment to be deleted", 120)


def test_quotas_of_the_configuration_file_are_checked_at_start(tmp_path: Path):
    from murano_common.options import ConfigError
    from murano_engine.backend.settings import load_settings

    conf = tmp_path / "api.conf"
    conf.write_text("[quotas]\nservers = -2\noverrides =\n    demo: packages=3\n"
                    "    demo: servers=1\n")
    try:
        load_settings(conf, {})
    except ConfigError as exc:
        assert exc.problems == [f"{conf} [quotas]: servers: -2 is below -1 (-1 is no limit)",
                                f"{conf} [quotas] overrides: project 'demo' has two entries"]
    else:
        raise AssertionError("the bad quotas were taken")
    conf.write_text("[quotas]\npackages = 7\noverrides = demo: servers=1, packages=-1; "
                    "x:y: environments=0\n")
    quotas = load_settings(conf, {}).quotas
    assert quotas.of("demo").servers == 1 and quotas.of("demo").limit("packages") is None
    assert quotas.of("x:y").environments == 0 and quotas.of("other").packages == 7
    assert quotas.of("other").deployments == 10  # the default


def test_two_requests_at_once_cannot_both_take_the_last_place(pg_database):
    """On PostgreSQL a request counts a project's rows only once another request of the
    project that counted first has ended (here: one that takes the last place)."""
    store = db.Store(pg_database, QuotaTable(Quotas(environments=1)))
    db.upgrade(store.engine)
    project = f"quota-{uuid.uuid4().hex[:8]}"
    outcome: list[BaseException | str] = []

    def second() -> None:
        try:
            environments.create_env(store, Context(project, "u", "t"), {"name": "second"},
                                    "io.murano.Environment")
            outcome.append("created")
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            outcome.append(exc)

    thread = threading.Thread(target=second)
    try:
        with store.write() as session:
            hold_project(session, project)
            thread.start()
            _until(lambda: _waiting_for_advisory_lock(store), "the second to wait", 30)
            session.add(db.Environment(id=db.new_id(), name="first", tenant_id=project,
                                       description={}))
        thread.join(30)
        [result] = outcome
        assert isinstance(result, QuotaExceeded), result
        assert "has 1 environment(s) and its environments quota is 1" in result.message
    finally:
        thread.join(30)
        store.engine.dispose()


def _waiting_for_advisory_lock(store: db.Store) -> bool:
    with store.engine.connect() as connection:
        return bool(connection.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND wait_event = 'advisory'")).scalar())
