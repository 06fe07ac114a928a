"""murano-api without a broker runs tasks in its own threads, under leases in the database:
a task whose process dies (killed, frozen, or stopped at SIGTERM) is taken over by an API
process, the same started again or another, and resumed from its journal, each step run
once; a task whose process lives is never taken."""

from __future__ import annotations

import re
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from murano_engine.backend import db
from tests.api.conftest import throwaway_pg_database
from tests.api.test_worker_journal import (
    _all_steps,
    _deploy_stepper,
    _journal,
    _steps,
    _texts,
    _wait,
)
from tests.databases import database_away

LEASE = {"task_lease": "2", "stop_grace": "1"}


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database of the test's own (the catalog starts empty): SQLite, as murano-api
    keeps by default, and PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/murano.sqlite"
        return
    with throwaway_pg_database() as url:
        yield url


def _took_over(api, base: str, task_id: str) -> list[str]:
    return [t for t in _texts(api, base, task_id) if "took the task over" in t]


def _holder(database: str, task_id: str) -> str | None:
    store = db.Store(database)
    try:
        with store.read() as session:
            return session.get(db.Task, task_id).worker
    finally:
        store.engine.dispose()


def _name(api) -> str:
    """The pattern of an API process's name as a task's holder: host, pid and a token."""
    return f"murano-api {re.escape(socket.gethostname())}:{api.process.pid}:[0-9a-f]{{6}}"


def test_a_killed_api_task_resumes_in_the_next_api(start_api, database):
    first = start_api(database, engine=LEASE)
    env_id, base, task_id = _deploy_stepper(first, steps=6, pause=1)
    _wait("2 steps reported", lambda: len(_steps(first, base, task_id)) >= 2)
    first.process.send_signal(signal.SIGKILL)
    first.process.wait(timeout=10)
    steps = sum(1 for e in _journal(database, task_id) if e["t"] != "begin")
    assert steps >= 2

    second = start_api(database, engine=LEASE)
    env = second.wait_env(env_id, timeout=60)
    assert env["status"] == "ready"
    assert env["services"][0]["greeting"] == "hello from stepper after 6 steps"
    # The steps reported before the kill are not run again; the rest once each.
    assert _steps(second, base, task_id) == _all_steps(6)
    [taken] = _took_over(second, base, task_id)
    assert re.fullmatch(f"{_name(second)} took the task over from {_name(first)}, which "
                        f"stopped; {steps} steps come from its journal", taken), taken
    assert _texts(second, base, task_id)[-1] == "Deployment finished"
    assert _journal(database, task_id) == []


@pytest.mark.parametrize("database", ["postgresql"], indirect=True)
def test_a_live_api_keeps_its_task_and_a_frozen_one_loses_it_for_good(start_api, database):
    first = start_api(database, engine=LEASE)
    second = start_api(database, engine=LEASE)
    env_id, base, task_id = _deploy_stepper(first, steps=4, pause=1)
    # Leases run out four times over while it runs: renewed, none is taken over.
    env = first.wait_env(env_id, timeout=60)
    assert env["status"] == "ready"
    assert _steps(first, base, task_id) == _all_steps(4)
    assert _took_over(first, base, task_id) == []
    first_name = _holder(database, task_id)
    assert re.fullmatch(_name(first), first_name or ""), first_name

    # A process frozen mid-task (SIGSTOP: it lives, but renews nothing) loses the task.
    session = first.ok("POST", f"{base}/configure")["id"]
    first.ok("POST", f"{base}/services", headers={"X-Configuration-Session": session},
             json={"?": {"type": "com.example.apitest.Stepper"}, "name": "second",
                   "steps": 3, "pause": 1})
    first.ok("POST", f"{base}/sessions/{session}/deploy")
    again = first.ok("GET", f"{base}/deployments")["deployments"][-1]["id"]
    _wait("a step of the second deployment",
          lambda: any(t.startswith("second step") for t in _texts(first, base, again)))
    first.process.send_signal(signal.SIGSTOP)
    try:
        env = second.wait_env(env_id, timeout=60, version=env["version"] + 1)
    finally:
        first.process.send_signal(signal.SIGCONT)
    texts = _texts(second, base, again)
    assert [t for t in texts if t.startswith("second step")] == [
        f"second step {n} of 3" for n in range(1, 4)]
    [taken] = _took_over(second, base, again)
    assert f"from {first_name}, which stopped" in taken
    assert env["status"] == "ready"
    # Woken, the frozen process runs no step more: its run stops before the next one.
    time.sleep(3)
    assert _texts(second, base, again) == texts
    assert "stopped here" in (first.folder / "api.log").read_text()
    assert _journal(database, again) == []
    assert second.ok("GET", f"/v1/environments/{env_id}")["version"] == env["version"]
    assert first.process.poll() is None  # and it serves on


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_sigterm_stops_a_task_at_its_next_step_for_the_next_api(start_api, database):
    first = start_api(database, engine={**LEASE, "stop_grace": "30"})
    env_id, base, task_id = _deploy_stepper(first, steps=3, pause=4)
    _wait("a step reported", lambda: _steps(first, base, task_id))
    started = time.monotonic()
    first.process.terminate()
    first.process.wait(timeout=40)
    # It stopped the task in its 4 s pause, not after the task's 12 s, nor its 30 s grace.
    assert time.monotonic() - started < 4
    assert first.process.returncode == 0

    second = start_api(database, engine=LEASE)
    env = second.wait_env(env_id, timeout=60)
    assert env["status"] == "ready"
    assert _steps(second, base, task_id) == _all_steps(3)
    texts = _texts(second, base, task_id)
    assert any(re.fullmatch(f"{_name(first)} stopped before the task ended; an API process "
                            "takes it over and resumes it from its journal", t) for t in texts)
    [taken] = _took_over(second, base, task_id)
    assert re.search(f"from {_name(first)}, which stopped", taken), taken


def test_a_task_whose_database_goes_away_goes_on_once_it_answers(start_api):
    # The steps of the Stepper catch every error MuranoPL may catch: a journal entry or a
    # report that could not be stored is not one of them (it would then go on with a step
    # a later run does again, or not at all). The run stops, keeping its task, and the
    # same process resumes it from its journal when the database answers, without
    # waiting for its lease (60 s) to run out.
    with throwaway_pg_database() as url:
        api = start_api(url, engine={"task_lease": "60"})
        env_id, base, task_id = _deploy_stepper(api, steps=5, pause=1)
        _wait("2 steps reported", lambda: len(_steps(api, base, task_id)) >= 2)
        with database_away(url):
            time.sleep(2.5)
        # resumed about a second after, not at the keeper's next round (15 s): the three
        # steps left take 3 s
        env = api.wait_env(env_id, timeout=10)
        assert env["status"] == "ready"
        assert env["services"][0]["greeting"] == "hello from stepper after 5 steps"
        assert _steps(api, base, task_id) == _all_steps(5)
        texts = _texts(api, base, task_id)
        [again] = [t for t in texts if "took the task up again" in t]
        assert re.fullmatch(f"{_name(api)} took the task up again; \\d+ steps come from its "
                            f"journal", again), again
        assert texts[-1] == "Deployment finished"
        assert _journal(url, task_id) == []


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_a_second_sigterm_does_not_cut_the_stop_of_a_busy_run_short(start_api, database):
    # The run counts for seconds between two steps (nothing outside the engine: it cannot
    # be stopped before its next step). The API waits stop_grace (1 s) for it, leaves it
    # with a short lease and exits; a second SIGTERM meanwhile changes nothing of that
    # (it used to end the stop there, and the process then waited for the run).
    first = start_api(database, engine={**LEASE, "stop_grace": "1"})
    env_id, base, task_id = _deploy_stepper(first, steps=2, pause=0, busy=12)
    _wait("a step reported", lambda: _steps(first, base, task_id))
    started = time.monotonic()
    first.process.terminate()
    time.sleep(0.3)
    first.process.terminate()
    first.process.wait(timeout=60)
    assert time.monotonic() - started < 3  # not the run's counting (about 3.5 s more)
    assert first.process.returncode == 0
    assert "1 tasks are unfinished" in (first.folder / "api.log").read_text()

    second = start_api(database, engine=LEASE)
    env = second.wait_env(env_id, timeout=90)
    assert env["status"] == "ready"
    assert _steps(second, base, task_id) == _all_steps(2)
