"""API hygiene: model patches stay inside the model, errors carry no traceback or server
path, JSON bodies are bounded, static actions honour their timeout and leave the API free."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from murano_engine.api.catalog import pack_folder
from murano_engine.api.environments import edit_services
from murano_engine.api.errors import ApiError
from murano_engine.backend.settings import ConfigError, load_settings
from tests.api.conftest import PACKAGES, ApiServer, throwaway_pg_database


def clean_error(response, status: int) -> dict:
    """The error of ``response``: the status, a message, a request id, nothing of the server."""
    assert response.status_code == status, response.text
    for leak in ("Traceback", "/work/", "/root/", "/tmp/", ".py\""):
        assert leak not in response.text, response.text
    error = response.json()["error"]
    assert error["message"] and error["traceback"] is None
    assert error["request_id"] == response.headers["x-openstack-request-id"]
    return error


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    server = ApiServer(tmp_path_factory.mktemp("api"), "sqlite:///{}".format(
        tmp_path_factory.mktemp("db") / "m.sqlite"), False)
    server.ok("POST", "/v1/catalog/packages", files={"p": ("p.zip", pack_folder(
        PACKAGES / "apitest"))})
    yield server
    server.stop()


@pytest.fixture
def draft(api):
    """An environment, an open session on it and the session's header."""
    env = api.ok("POST", "/v1/environments", json={"name": f"env-{uuid.uuid4().hex}"})
    base = f"/v1/environments/{env['id']}"
    sid = api.ok("POST", f"{base}/configure")["id"]
    return env, base, {"X-Configuration-Session": sid}


def test_model_patch_keeps_the_root_ids_and_types(api, draft):
    env, base, header = draft
    api.ok("POST", f"{base}/services", headers=header,
           json={"?": {"id": "svc1", "type": "com.example.apitest.Echo"}, "name": "one"})
    before = api.ok("GET", f"{base}/model/", headers=header)
    network = before["defaultNetworks"]["environment"]["?"]
    refused = [
        ({"op": "replace", "path": "", "value": [1]}, 403, "''"),
        ({"op": "remove", "path": ""}, 403, "''"),
        ({"op": "replace", "path": "/?", "value": {"id": "x", "type": "y"}}, 403, "/?"),
        ({"op": "replace", "path": "/?/type", "value": "y"}, 403, "/?/type"),
        ({"op": "replace", "path": "/defaultNetworks/environment/?/id", "value": "z"}, 403,
         "/defaultNetworks/environment/?/id"),
        ({"op": "replace", "path": "/defaultNetworks/environment",
          "value": {"?": {"id": network["id"], "type": "com.example.Other"}}}, 403,
         "/defaultNetworks/environment"),
        ({"op": "add", "path": "/services/-", "value": {}}, 403, "/services/-"),
        ({"op": "replace", "path": 7, "value": 1}, 400, "7"),
        ({"op": "add", "path": "no-slash", "value": 1}, 400, "no-slash"),
        ({"op": "remove", "path": "/nope"}, 400,
         "patch operation 0 (remove /nope) does not apply: can't remove a non-existent"),
        ({"op": "replace", "path": "/defaultNetworks/nope/name", "value": "x"}, 400,
         "(replace /defaultNetworks/nope/name) does not apply: a part of its path is not in"),
    ]
    for change, status, named in refused:
        error = clean_error(api.request("PATCH", f"{base}/model/", json=[change],
                                        headers=header), status)
        assert named in error["message"], (change, error)
        assert "'environment'" not in error["message"]  # not the model itself
    assert api.ok("GET", f"{base}/model/", headers=header) == before
    # the inside still changes, objects included, and services can still be added
    patched = api.ok("PATCH", f"{base}/model/", headers=header, json=[
        {"op": "replace", "path": "/name", "value": "renamed"},
        {"op": "replace", "path": "/defaultNetworks/environment/name", "value": "net"},
        {"op": "add", "path": "/defaultNetworks/flat",
         "value": {"?": {"id": "flat1", "type": "io.murano.resources.ExistingNetwork"}}}])
    assert patched["name"] == "renamed" and patched["?"] == before["?"]
    assert patched["defaultNetworks"]["environment"]["?"] == network
    api.ok("POST", f"{base}/services", headers=header,
           json={"?": {"type": "com.example.apitest.Echo"}, "name": "two"})
    assert [s["name"] for s in api.ok("GET", f"{base}/services", headers=header)] == \
        ["one", "two"]


def test_services_of_a_model_without_objects_is_a_clean_conflict(api, draft):
    """A model whose Objects is not an object (an older patch, a hand-edited row)."""
    from murano_engine.api.auth import Context
    from murano_engine.backend import db

    env, base, header = draft
    store = db.Store(api.config.read_text().split("connection = ")[1].split()[0])
    sid = header["X-Configuration-Session"]
    with store.write() as session:
        row = session.get(db.Session, sid)
        row.description = {**row.description, "Objects": [1]}
    error = clean_error(api.request("POST", f"{base}/services", headers=header, json={
        "?": {"type": "com.example.apitest.Echo"}, "name": "x"}), 409)
    assert sid in error["message"]
    clean_error(api.request("PATCH", f"{base}/model/", headers=header,
                            json=[{"op": "add", "path": "/a", "value": 1}]), 409)
    with pytest.raises(Exception, match="no environment object"):
        edit_services(store, Context("proj-a", "alice", [], "tok-a"), env["id"], sid,
                      "PUT", "", [])
    store.engine.dispose()
    assert api.ok("GET", "/v1/environments")["environments"]


def test_deep_and_huge_json_bodies_are_clean_400s(api):
    for body in (b"[" * 100_000, b"[" * 100_000 + b"]" * 100_000,
                 b'{"name": ' + b'{"a": ' * 5_000 + b"1" + b"}" * 5_001):
        error = clean_error(api.request("POST", "/v1/environments", data=body), 400)
        assert "levels deep" in error["message"] and "at most 100" in error["message"]
    # brackets inside strings do not count; a deep __metadata__ is refused the same way
    assert api.ok("POST", "/v1/environments", json={"name": '[\\"{' * 60})["name"]
    metadata = clean_error(api.request("POST", "/v1/catalog/packages", files={
        "p": ("p.zip", b"x")}, data={"__metadata__": "[" * 50_000}), 400)
    assert "__metadata__" in metadata["message"]
    too_large = api.request("POST", "/v1/environments", data=b"[" * (17 * 1024 * 1024))
    assert too_large.status_code == 413 and "Traceback" not in too_large.text
    assert api.ok("GET", "/v1/environments")["environments"]


def test_an_unexpected_failure_gives_only_a_request_id(caplog):
    """A handler that fails inside: the body has the request id, the log has the rest."""
    from werkzeug.test import Client

    from murano_engine.api.app import Api
    from murano_engine.api.auth import Context
    from murano_engine.backend.settings import Settings

    app = Api(Settings(), None, None, lambda _environ: Context("p", "u", [], "t"))

    def broken(*_args: object) -> None:
        raise RuntimeError(f"cannot open {__file__}")

    app.on_list_envs = broken
    for accept, status in (("application/json", 500), ("*/*", 500)):
        response = Client(app).get("/v1/environments", headers={"Accept": accept})
        request_id = response.headers["x-openstack-request-id"]
        text = response.get_data(as_text=True)
        assert response.status_code == status and request_id in text
        assert "Traceback" not in text and "cannot open" not in text and "/work" not in text
        logged = [r for r in caplog.records if request_id in r.getMessage()]
        assert logged and "cannot open" in str(logged[0].exc_info[1])
    # a server path in an error's own message goes out relative
    app.on_list_envs = lambda *_: (_ for _ in ()).throw(
        ApiError(f"cannot read {__file__}", status=400))
    body = Client(app).get("/v1/environments").get_json()["error"]
    assert body["message"] == "cannot read tests/api/test_hygiene.py"


def test_a_failed_tasks_stack_goes_out_with_server_paths_hidden():
    """Deployments, reports and action results carry a MuranoPL stack that names the files
    of the core library and of the package cache (the web pages hid them, the API not)."""
    from murano_engine.api import environments
    from murano_engine.api.app import Api
    from murano_engine.backend.settings import Settings

    app = Api(Settings(), None, None, lambda _environ: None)
    stack = f"  io.murano io.murano.Environment.deploy at {__file__}:17:5"
    result = {"isException": True, "result": {"message": "m", "traceback": stack}}
    for name, route in (("list_deployments", app.on_list_deployments),
                        ("action_result", app.on_action_result),
                        ("reports", app.on_reports)):
        original = getattr(environments, name)
        setattr(environments, name, lambda *_args: {"deployments": [{"result": result}]})
        try:
            args = ("env", "task") if name != "list_deployments" else ("env",)
            request = type("R", (), {"args": type("A", (), {"getlist": lambda *_: []})()})()
            text = route(request, None, *args).get_data(as_text=True)
        finally:
            setattr(environments, name, original)
        assert "tests/api/test_hygiene.py:17:5" in text and __file__ not in text, name


def _nap(api: ApiServer, seconds: int) -> object:
    return api.request("POST", "/v1/actions", json={
        "className": "com.example.apitest.Echo", "methodName": "nap",
        "parameters": {"seconds": seconds}})


def _add(api: ApiServer) -> object:
    return api.ok("POST", "/v1/actions", json={
        "className": "com.example.apitest.Echo", "methodName": "add",
        "parameters": {"a": 2, "b": 3}})


def _wait_for_worker(api: ApiServer, seconds: float = 30) -> None:
    """Until the worker answers a static action within static_action_timeout (a worker
    starting on a busy machine may take longer than that to take its first message)."""
    deadline = time.monotonic() + seconds
    while api.request("POST", "/v1/actions", json={
            "className": "com.example.apitest.Echo", "methodName": "add",
            "parameters": {"a": 2, "b": 3}}).status_code != 200:
        assert time.monotonic() < deadline, "the worker never answered"


def _slow_static_actions(api: ApiServer, count: int, seconds: int) -> tuple[list, float]:
    """``count`` slow static actions at once; the slowest GET /v1/environments meanwhile."""
    with ThreadPoolExecutor(count) as pool:
        calls = [pool.submit(_nap, api, seconds) for _ in range(count)]
        time.sleep(0.3)
        slowest = 0.0
        while not all(c.done() for c in calls):
            started = time.monotonic()
            api.ok("GET", "/v1/environments")
            slowest = max(slowest, time.monotonic() - started)
            time.sleep(0.1)
        return [c.result() for c in calls], slowest


def test_static_actions_time_out_and_leave_the_api_answering(start_api):
    api = start_api(api_workers="4", engine={"static_action_timeout": "1",
                                             "static_action_workers": "2"})
    api.ok("POST", "/v1/catalog/packages", files={"p": ("p.zip", pack_folder(
        PACKAGES / "apitest"))})
    assert api.ok("POST", "/v1/actions", json={
        "className": "com.example.apitest.Echo", "methodName": "nap",
        "parameters": {"seconds": 0}}) == 0
    thrown = api.request("POST", "/v1/actions", json={
        "className": "com.example.apitest.Echo", "methodName": "boom"})
    assert clean_error(thrown, 503)["message"] == "static boom"
    started = time.monotonic()
    answers, slowest = _slow_static_actions(api, 9, 4)
    assert slowest < 1.0 and time.monotonic() - started < 3
    timed_out = [clean_error(a, 504)["message"] for a in answers if a.status_code == 504]
    busy = [clean_error(a, 503)["message"] for a in answers if a.status_code == 503]
    assert len(timed_out) == 2 and len(busy) == 7, [a.text for a in answers]
    assert all("static_action_timeout (1 s)" in m and "Echo.nap" in m for m in timed_out)
    assert all("static_action_workers" in m for m in busy)
    # The naps (4 s) were stopped at the timeout too (their budget), so their threads
    # take a call again well before the naps would have ended.
    while True:
        answer = api.request("POST", "/v1/actions", json={
            "className": "com.example.apitest.Echo", "methodName": "add",
            "parameters": {"a": 2, "b": 3}})
        if answer.status_code != 503 or time.monotonic() - started > 3.5:
            break
        time.sleep(0.05)
    assert answer.status_code == 200 and answer.json() == 5, answer.text
    assert time.monotonic() - started < 3.5


def _resident_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status
                    if line.startswith("VmRSS:"))


def test_what_a_static_action_held_is_freed_when_it_ends(start_api):
    """Its executor and objects refer to each other: what they held waited for Python's
    cycle collector, which a few big strings never wake. Four calls of 300 MB each,
    within the task's memory limit, left the API holding 1.2 GB."""
    api = start_api()
    api.ok("POST", "/v1/catalog/packages", files={"p": ("p.zip", pack_folder(
        PACKAGES / "apitest"))})
    before = _resident_mb(api.process.pid)
    for _ in range(4):
        assert api.ok("POST", "/v1/actions", json={
            "className": "com.example.apitest.Echo", "methodName": "hold",
            "parameters": {"megabytes": 300}}) == 1500
    grown = _resident_mb(api.process.pid) - before
    assert grown < 250, f"the API grew by {grown} MB"


def test_static_action_timeout_through_workers(start_api):
    with throwaway_pg_database() as database:
        api = start_api(database, broker=True, api_workers="4",
                        engine={"static_action_timeout": "1", "static_action_workers": "2"})
        api.start_worker()
        api.ok("POST", "/v1/catalog/packages", files={"p": ("p.zip", pack_folder(
            PACKAGES / "apitest"))})
        _wait_for_worker(api)
        assert _add(api) == 5
        answers, slowest = _slow_static_actions(api, 6, 2)
        assert slowest < 1.0
        statuses = sorted(a.status_code for a in answers)
        assert statuses == [503] * 4 + [504] * 2, [a.text for a in answers]
        assert all("static_action_timeout (1 s)" in clean_error(a, 504)["message"]
                   for a in answers if a.status_code == 504)
        time.sleep(2.5)
        assert _add(api) == 5
        api.stop()


def test_static_action_workers_stay_below_the_request_threads(tmp_path):
    config = tmp_path / "api.conf"
    for text, named in (("[engine]\nstatic_action_workers = 8\n", "static_action_workers"),
                        ("[engine]\nstatic_action_workers = 0\n", "static_action_workers"),
                        ("[engine]\nstatic_action_timeout = 0\n", "static_action_timeout")):
        config.write_text(text)
        with pytest.raises(ConfigError, match=named):
            load_settings(config)
    config.write_text("[engine]\nstatic_action_workers = 7\n")
    assert load_settings(config).static_action_workers == 7
