"""Workers over the real RabbitMQ and PostgreSQL: a killed worker's task resumes from its
journal in the next worker; a task no worker finishes is dead-lettered and fails."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kombu import Connection, Queue
from sqlalchemy import select, update

from murano_engine.api.catalog import pack_folder
from murano_engine.backend import db
from murano_engine.backend.settings import ConfigError, Settings, load_settings
from murano_engine.backend.task_queues import QueueMismatch, declare_queues
from murano_engine.engine.journal import TAMPERED
from tests.api.conftest import AMQP, PACKAGES, throwaway_pg_database
from tests.databases import database_away

RESUMED = "again, after another worker stopped"


@pytest.fixture
def database() -> Iterator[str]:
    """A PostgreSQL database of the test's own (the catalog starts empty)."""
    with throwaway_pg_database() as url:
        yield url


def _name(worker: subprocess.Popen) -> str:
    """The pattern of a worker's name as a task's holder: host, pid and a token."""
    return f"{re.escape(socket.gethostname())}:{worker.pid}:[0-9a-f]{{6}}"


def _journal(database: str, task_id: str) -> list[dict[str, Any]]:
    store = db.Store(database)
    try:
        with store.read() as session:
            return list(session.scalars(select(db.JournalEntry.entry)
                                        .where(db.JournalEntry.task_id == task_id)
                                        .order_by(db.JournalEntry.seq)))
    finally:
        store.engine.dispose()


def _texts(api: Any, base: str, task_id: str) -> list[str]:
    return [r["text"] for r in api.ok("GET", f"{base}/deployments/{task_id}")["reports"]]


def _steps(api: Any, base: str, task_id: str) -> list[str]:
    """The Stepper's step reports of the task, in order."""
    return [t for t in _texts(api, base, task_id) if " step " in t]


def _all_steps(count: int) -> list[str]:
    """The Stepper's step reports of a whole deployment of ``count`` steps."""
    return [f"stepper step {n} of {count}" for n in range(1, count + 1)]


def _wait(what: str, check: Any, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise TimeoutError(f"waited {timeout} s for {what}")


def _deploy_stepper(api: Any, steps: int, pause: int, busy: int = 0) -> tuple[str, str, str]:
    """Deploy an environment holding one Stepper; its id, URL path and task id."""
    api.ok("POST", "/v1/catalog/packages", files={"p": ("p.zip", pack_folder(
        PACKAGES / "apitest"))})
    env = api.ok("POST", "/v1/environments", json={"name": f"steps-{uuid.uuid4().hex[:6]}"})
    base = f"/v1/environments/{env['id']}"
    sid = api.ok("POST", f"{base}/configure")["id"]
    api.ok("POST", f"{base}/services", headers={"X-Configuration-Session": sid},
           json={"?": {"type": "com.example.apitest.Stepper"}, "name": "stepper",
                 "steps": steps, "pause": pause, "busy": busy})
    api.ok("POST", f"{base}/sessions/{sid}/deploy")
    task_id = api.ok("GET", f"{base}/deployments")["deployments"][0]["id"]
    return env["id"], base, task_id


def _at_step_two(api: Any, steps: int) -> tuple[subprocess.Popen, str, str, str]:
    """A worker deploying a Stepper of ``steps`` one-second steps, once it reported two:
    the worker, and the environment's id, URL path and task id."""
    worker = api.start_worker()
    env_id, base, task_id = _deploy_stepper(api, steps=steps, pause=1)
    _wait("2 steps reported", lambda: len(_steps(api, base, task_id)) >= 2)
    return worker, env_id, base, task_id


def _kill(worker: subprocess.Popen) -> None:
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=10)


def test_killed_worker_task_resumes_from_its_journal(start_api, database):
    api = start_api(database, broker=True)
    first = api.start_worker()
    env_id, base, task_id = _deploy_stepper(api, steps=6, pause=1)

    def reports_journaled() -> int:
        return sum(1 for e in _journal(database, task_id)
                   if "|report|" in e["k"] and e["t"] == "end")

    _wait("3 reports in the journal", lambda: reports_journaled() >= 3)
    _kill(first)
    before = _journal(database, task_id)
    steps = sum(1 for e in before if e["t"] != "begin")
    sent = _steps(api, base, task_id)
    assert 3 <= len(sent) < 6, sent

    second = api.start_worker()
    env = api.wait_env(env_id, timeout=60)
    texts = _texts(api, base, task_id)
    # The steps reported before the kill are not reported again; the rest once each.
    assert [t for t in texts if " step " in t] == _all_steps(6)
    taken = [t for t in texts if "took the task" in t]
    assert len(taken) == 2
    assert re.fullmatch(f"Worker {_name(first)} took the task", taken[0]), taken
    assert re.fullmatch(f"Worker {_name(second)} took the task " + re.escape(
        f"{RESUMED}; {steps} steps come from its journal (delivery 2 of at most 3)"),
        taken[1]), taken
    assert texts[-1] == "Deployment finished"
    assert env["status"] == "ready"
    assert env["services"][0]["greeting"] == "hello from stepper after 6 steps"
    assert api.ok("GET", f"{base}/deployments")["deployments"][0]["state"] == "success"
    assert _journal(database, task_id) == []  # gone with the stored result


def test_a_tampered_journal_fails_the_task_and_runs_nothing(start_api, database):
    api = start_api(database, broker=True)
    first, env_id, base, task_id = _at_step_two(api, steps=6)
    _kill(first)
    sent = _steps(api, base, task_id)
    entries = _journal(database, task_id)
    seq = max(n for n, e in enumerate(entries) if e["t"] == "end" and "|report|" in e["k"])
    store = db.Store(database)
    try:
        with store.write() as session:  # a made-up value in place of what was recorded
            session.execute(update(db.JournalEntry).where(
                db.JournalEntry.task_id == task_id, db.JournalEntry.seq == seq).values(
                entry={**entries[seq], "v": "forged"}))
    finally:
        store.engine.dispose()

    api.start_worker()
    env = api.wait_env(env_id, ("deploy failure",), timeout=60)
    reason = f"the journal of task {task_id}, entry {seq}: {TAMPERED}"
    deployment = api.ok("GET", f"{base}/deployments")["deployments"][0]
    assert deployment["state"] == "completed_w_errors"
    assert deployment["result"]["result"]["message"] == reason
    assert _steps(api, base, task_id) == sent  # none ran
    assert env["acquired_by"] is None


def test_task_no_worker_finishes_is_dead_lettered(start_api, database):
    api = start_api(database, broker=True, engine={"max_deliveries": "2"})
    env_id, base, task_id = _deploy_stepper(api, steps=1, pause=120)
    killed = []
    for delivery in (1, 2):
        worker = api.start_worker()
        _wait(f"delivery {delivery}", lambda n=delivery: sum(
            "took the task" in t for t in _texts(api, base, task_id)) == n)
        _kill(worker)
        killed.append(worker)
    env = api.wait_env(env_id, ("deploy failure",), timeout=30)
    reason = (f"the task was delivered 2 times and no worker finished it; the last, worker "
              f"{_name(killed[-1])}, stopped while running it \\(see its log\\)")
    deployment = api.ok("GET", f"{base}/deployments")["deployments"][0]
    assert deployment["state"] == "completed_w_errors"
    assert deployment["result"]["isException"] is True
    assert re.fullmatch(reason, deployment["result"]["result"]["message"]), deployment
    reports = api.ok("GET", f"{base}/deployments/{task_id}")["reports"]
    assert [r["level"] for r in reports[-2:]] == ["error", "error"]
    assert re.fullmatch(reason, reports[-2]["text"]), reports[-2]
    assert reports[-1]["text"] == "Deployment finished with errors"
    assert RESUMED in reports[-3]["text"] and "delivery 2 of at most 2" in reports[-3]["text"]
    # The environment is free again: a new session can be opened and deployed.
    assert env["acquired_by"] is None
    assert api.ok("POST", f"{base}/configure")["state"] == "opened"
    assert _journal(database, task_id) == []


def test_a_task_queue_declared_otherwise_is_named(tmp_path: Path) -> None:
    suffix = uuid.uuid4().hex[:8]
    settings = Settings(transport_url=AMQP, task_queue=f"murano-old-{suffix}",
                        result_queue=f"murano-results-{suffix}")
    config = tmp_path / "api.conf"
    config.write_text(f"[DEFAULT]\ntransport_url = {AMQP}\n[engine]\n"
                      f"task_queue = {settings.task_queue}\n"
                      f"result_queue = {settings.result_queue}\n")
    with Connection(AMQP) as connection:
        # a classic queue, as an earlier version declared it
        Queue(settings.task_queue, durable=True)(connection.default_channel).declare()
        try:
            with pytest.raises(QueueMismatch, match=rf"queue '{settings.task_queue}' exists with "
                                                    r"other arguments .*inequivalent arg"):
                declare_queues(connection.channel(), settings)
            worker = subprocess.run([sys.executable, "-m", "murano_engine.cli.main", "worker",
                                     "--config-file", str(config)],
                                    capture_output=True, text=True, timeout=60)
            assert worker.returncode != 0
            assert f"rabbitmqctl delete_queue {settings.task_queue}" in worker.stderr
        finally:
            channel = connection.channel()
            for name in (settings.task_queue, settings.dead_letter_queue):
                channel.queue_delete(name)


def test_max_deliveries_is_at_least_one(tmp_path: Path) -> None:
    config = tmp_path / "api.conf"
    config.write_text("[engine]\nmax_deliveries = 0\n")
    with pytest.raises(ConfigError, match=r"\[engine\] max_deliveries must be at least 1"):
        load_settings(config, {})
    config.write_text("[engine]\nmax_deliveries = 5\n")
    assert load_settings(config, {}).max_deliveries == 5


def test_a_worker_whose_database_goes_away_runs_the_task_on_once_it_answers(start_api,
                                                                            database):
    # The Stepper's steps catch every error MuranoPL may catch; a step that cannot be
    # recorded is not one of them. The worker keeps the task (unacknowledged: no other
    # delivery) and runs it again from its journal once the database answers.
    api = start_api(database, broker=True)
    worker, env_id, base, task_id = _at_step_two(api, steps=5)
    with database_away(database):
        time.sleep(2.5)
    env = api.wait_env(env_id, timeout=60)
    texts = _texts(api, base, task_id)
    assert env["status"] == "ready"
    assert env["services"][0]["greeting"] == "hello from stepper after 5 steps"
    assert [t for t in texts if " step " in t] == _all_steps(5)
    taken = [t for t in texts if "took the task" in t]
    assert len(taken) == 2, taken
    assert re.fullmatch(f"Worker {_name(worker)} took the task", taken[0]), taken
    assert re.match(f"Worker {_name(worker)} " + re.escape(
        "took the task up again (it could not record a step); "), taken[1]), taken
    assert texts[-1] == "Deployment finished"
    assert worker.poll() is None  # it goes on serving


def test_a_worker_whose_task_another_worker_took_runs_no_step_more(start_api, database):
    # The broker gives a task on when it takes its worker for dead (a connection cut); if
    # that worker still runs, its journal refuses its next step once the task names the
    # other worker, and it stops there, serving on.
    api = start_api(database, broker=True)
    worker, env_id, base, task_id = _at_step_two(api, steps=8)
    store = db.Store(database)
    try:
        with store.write() as session:
            session.execute(update(db.Task).where(db.Task.id == task_id)
                            .values(worker="another-host:1"))
    finally:
        store.engine.dispose()
    journaled = len(_journal(database, task_id))
    time.sleep(3)  # three steps' time
    assert len(_journal(database, task_id)) == journaled
    steps = _steps(api, base, task_id)
    assert 2 <= len(steps) <= 3, steps  # (one in flight as the task changed hands)
    assert worker.poll() is None
    log = (api.folder / "api.log").read_text()
    assert re.search(f"task {task_id} stopped here: task {task_id} is no longer "
                     f"{_name(worker)}'s: another-host:1 took it over", log)
    assert api.ok("GET", f"/v1/environments/{env_id}")["status"] == "deploying"


def test_a_worker_stopped_while_waiting_for_the_database_hands_its_task_on_once(
        start_api, database):
    # SIGTERM while its run waits for the database: the worker ends, and the task goes
    # back to the queue once (one delivery counted), for the next worker.
    api = start_api(database, broker=True)
    first, env_id, base, task_id = _at_step_two(api, steps=4)
    with database_away(database):
        time.sleep(2)
        first.terminate()
        first.wait(timeout=30)
    api.start_worker()
    env = api.wait_env(env_id, timeout=60)
    assert env["status"] == "ready"
    assert _steps(api, base, task_id) == _all_steps(4)
    taken = [t for t in _texts(api, base, task_id) if "took the task" in t]
    assert taken[-1].endswith("(delivery 2 of at most 3)"), taken


def test_a_report_met_while_the_database_is_away_is_stored_after_it_with_a_line_a_try(
        start_api, database):
    # The API keeps a report it cannot store on the queue and tries again each second; it
    # logs a line a try, not a traceback, and stores the report once the database answers.
    api = start_api(database, broker=True)
    _env_id, base, task_id = _deploy_stepper(api, steps=1, pause=1)  # no worker takes it
    report = {"kind": "report", "task_id": task_id, "report": {
        "text": "sent while the database was away", "level": "info",
        "report_id": uuid.uuid4().hex}}
    with database_away(database), Connection(AMQP) as connection:
        connection.Producer(serializer="json").publish(
            report, routing_key=api.queues[2], delivery_mode=2)
        time.sleep(2.5)
    _wait("the report stored", lambda: report["report"]["text"] in _texts(api, base, task_id))
    assert _texts(api, base, task_id).count(report["report"]["text"]) == 1
    log = (api.folder / "api.log").read_text()
    assert "could not store a result, the database does not answer (" in log
    assert "Traceback" not in log
