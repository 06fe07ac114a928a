"""Engine workers over the real RabbitMQ: reports flow back, a dead worker's task is taken over."""

from __future__ import annotations

import re
import signal
import socket
import time

from murano_engine.api.catalog import pack_folder
from tests.api.conftest import PACKAGES
from tests.databases import throwaway_pg_database


def _wait_report(api, base: str, task_id: str, text: str, timeout: float = 30) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reports = api.ok("GET", f"{base}/deployments/{task_id}")["reports"]
        if any(text in r["text"] for r in reports):
            return reports
        time.sleep(0.1)
    raise TimeoutError(f"no report {text!r}: {reports}")


def test_worker_killed_mid_deployment_is_replaced(start_api, pg_database):
    api = start_api(pg_database, broker=True)
    first = api.start_worker()
    api.ok("POST", "/v1/catalog/packages", files={"p": ("p.zip", pack_folder(
        PACKAGES / "apitest"))})
    assert api.ok("POST", "/v1/actions", json={
        "className": "com.example.apitest.Echo", "methodName": "add",
        "parameters": {"a": 1, "b": 2}}) == 3
    # The worker says what it does (its INFO lines are not swallowed by the CLI's set-up).
    log = (api.folder / "api.log").read_text()
    assert re.search(f"worker {re.escape(socket.gethostname())}:{first.pid}:[0-9a-f]{{6}} "
                     "takes tasks from", log)
    missing = api.request("POST", "/v1/actions", json={
        "className": "com.example.apitest.Echo", "methodName": "nope"})
    assert missing.status_code == 404

    env = api.ok("POST", "/v1/environments", json={"name": "worked"})
    base = f"/v1/environments/{env['id']}"
    sid = api.ok("POST", f"{base}/configure")["id"]
    api.ok("POST", f"{base}/services", headers={"X-Configuration-Session": sid},
           json={"?": {"type": "com.example.apitest.Echo"}, "name": "slow", "delay": 3})
    api.ok("POST", f"{base}/sessions/{sid}/deploy")
    task_id = api.ok("GET", f"{base}/deployments")["deployments"][0]["id"]
    _wait_report(api, base, task_id, "took the task")
    api.start_worker()
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    reports = _wait_report(api, base, task_id, "Deployment finished", timeout=40)
    assert any("again, after another worker stopped" in r["text"] for r in reports)
    finished = api.ok("GET", f"/v1/environments/{env['id']}")
    assert finished["status"] == "ready"
    assert finished["services"][0]["greeting"] == "hello from slow"
    assert api.ok("GET", f"{base}/deployments")["deployments"][0]["state"] == "success"


def test_one_worker_runs_two_projects_deployments_side_by_side(start_api):
    """A worker takes up to [engine] task_workers tasks at once: a project's deployment
    starts while another project's is still running, on one worker."""
    with throwaway_pg_database() as database:  # (its own catalog: both upload apitest)
        _two_projects_side_by_side(start_api(database, broker=True))


def _two_projects_side_by_side(api) -> None:
    api.start_worker()
    deployments = []
    for token in ("tok-a", "tok-b"):
        api.ok("POST", "/v1/catalog/packages", token=token, files={"p": ("p.zip", pack_folder(
            PACKAGES / "apitest"))})
        env = api.ok("POST", "/v1/environments", token=token, json={"name": f"side-{token}"})
        base = f"/v1/environments/{env['id']}"
        sid = api.ok("POST", f"{base}/configure", token=token)["id"]
        api.ok("POST", f"{base}/services", token=token,
               headers={"X-Configuration-Session": sid},
               json={"?": {"type": "com.example.apitest.Echo"}, "name": token, "delay": 4})
        deployments.append((token, base, sid))
    for token, base, sid in deployments:
        api.ok("POST", f"{base}/sessions/{sid}/deploy", token=token)

    def reports(token: str, base: str) -> list[dict]:
        task_id = api.ok("GET", f"{base}/deployments", token=token)["deployments"][0]["id"]
        return api.ok("GET", f"{base}/deployments/{task_id}", token=token)["reports"]

    deadline = time.monotonic() + 60
    while not all(any("Deployment finished" in r["text"] for r in reports(t, b))
                  for t, b, _ in deployments):
        assert time.monotonic() < deadline, "the deployments did not finish"
        time.sleep(0.2)
    (a, b) = [reports(t, base) for t, base, _ in deployments]
    took = [next(r["created"] for r in rs if "took the task" in r["text"]) for rs in (a, b)]
    finished = [next(r["created"] for r in rs if "Deployment finished" in r["text"])
                for rs in (a, b)]
    assert max(took) < min(finished), (took, finished)  # the second began before either ended
