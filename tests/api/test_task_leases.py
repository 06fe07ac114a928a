"""Leases on in-process tasks, on SQLite and the real PostgreSQL: one holder at a time, taken
over only once run out, and a journal that records only for its task's holder."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest
from sqlalchemy import update

from murano_engine.api import environments
from murano_engine.backend import db, task_leases
from murano_engine.backend.journal_store import DbJournalStore, LeaseLost
from tests.api.test_journal_store import new_task, stored


def _expire(store: db.Store, task_id: str) -> None:
    with store.write() as session:
        session.execute(update(db.Task).where(db.Task.id == task_id).values(
            lease_until=db.now() - dt.timedelta(seconds=1)))


def _orphaned(store: db.Store, task_id: str) -> list[str | None]:
    """The last holders :func:`task_leases.orphaned` names ``task_id`` with (the database
    may hold other tests' tasks)."""
    return [holder for found, holder in task_leases.orphaned(store, 60) if found == task_id]


def _age(store: db.Store, task_id: str, seconds: float) -> None:
    with store.write() as session:
        session.execute(update(db.Task).where(db.Task.id == task_id).values(
            started=db.now() - dt.timedelta(seconds=seconds)))


def test_one_holder_at_a_time_until_its_lease_runs_out(store: db.Store) -> None:
    task_id = new_task(store)
    assert task_leases.claim(store, task_id, "a", 60)
    assert not task_leases.claim(store, task_id, "b", 60)
    assert not task_leases.claim(store, task_id, "a", 60)  # held: not taken twice
    assert task_leases.renew(store, "a", [task_id], 60) == set()
    assert _orphaned(store, task_id) == []
    _expire(store, task_id)
    assert _orphaned(store, task_id) == ["a"]
    assert task_leases.claim(store, task_id, "b", 60)
    assert task_leases.renew(store, "a", [task_id], 60) == {task_id}  # a learns it lost it
    assert _orphaned(store, task_id) == []


def test_many_claiming_at_once_one_wins(store: db.Store) -> None:
    task_id = new_task(store)
    won: list[str] = []
    start = threading.Barrier(8)

    def claim(name: str) -> None:
        start.wait()
        if task_leases.claim(store, task_id, name, 60):
            won.append(name)

    threads = [threading.Thread(target=claim, args=(f"p{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1


def test_a_new_task_is_left_to_its_maker_for_a_lease(store: db.Store) -> None:
    task_id = new_task(store)
    assert _orphaned(store, task_id) == []
    _age(store, task_id, 61)
    assert _orphaned(store, task_id) == [None]


def test_finished_and_gone_tasks_are_nobody_s(store: db.Store) -> None:
    task_id = new_task(store)
    assert task_leases.claim(store, task_id, "a", 60)
    environments.process_result(store, task_id, {"action": {}, "model": None})
    _expire(store, task_id)
    assert _orphaned(store, task_id) == []
    assert not task_leases.claim(store, task_id, "b", 60)
    assert not task_leases.claim(store, "no-such-task", "b", 60)
    assert task_leases.renew(store, "a", ["no-such-task"], 60) == set()


def test_only_the_holder_stores_a_result(store: db.Store) -> None:
    task_id = new_task(store)
    assert task_leases.claim(store, task_id, "a", 60)
    _expire(store, task_id)
    assert task_leases.claim(store, task_id, "b", 60)
    environments.process_result(store, task_id, {"action": {"isException": True}},
                                holder="a")
    with store.read() as session:
        assert session.get(db.Task, task_id).finished is None
    environments.process_result(store, task_id, {"action": {}}, holder="b")
    with store.read() as session:
        assert session.get(db.Task, task_id).finished is not None


def test_a_journal_records_only_for_its_task_s_holder(store: db.Store) -> None:
    task_id = new_task(store)
    assert task_leases.claim(store, task_id, "a", 60)
    journal = DbJournalStore(store, task_id, holder="a")
    journal.append({"k": "0|id||0", "t": "end", "v": "x"})
    _expire(store, task_id)
    assert task_leases.claim(store, task_id, "b", 60)
    with pytest.raises(LeaseLost, match=f"task {task_id} is no longer a's: b took it over"):
        journal.append({"k": "0|id||1", "t": "end", "v": "y"})
    assert stored(store, task_id) == [0]
    taken = DbJournalStore(store, task_id, holder="b")
    assert taken.load() == [{"k": "0|id||0", "t": "end", "v": "x"}]
    taken.append({"k": "0|id||1", "t": "end", "v": "z"})
    assert stored(store, task_id) == [0, 1]
    environments.process_result(store, task_id, {"action": {}}, holder="b")
    with pytest.raises(LeaseLost, match="it is finished"):
        taken.append({"k": "0|id||2", "t": "end", "v": "w"})


def test_a_stopping_api_keeps_renewing_what_still_runs_then_shortens_it(
        store: db.Store, tmp_path) -> None:
    """While murano-api waits (stop_grace) for a run that does not stop at once, its
    leases are still renewed: no other process takes the task meanwhile. Then the lease
    is shortened and the process may end."""
    from murano_engine.backend.settings import Settings
    from murano_engine.server.in_process import STOPPING_LEASE, LocalDispatcher
    settings = Settings(database=str(store.engine.url), task_lease=1.0,
                        packages_cache=tmp_path / "packages")
    dispatcher = LocalDispatcher(store, settings)
    task_id = new_task(store)
    assert dispatcher._claim(task_id)  # held, as a run that ignores the stop is
    closing = threading.Thread(target=dispatcher.close, args=(2.5,))
    closing.start()
    seen: list[dt.datetime] = []
    while closing.is_alive():
        with store.read() as session:
            seen.append(session.get(db.Task, task_id).lease_until)
        assert seen[-1] > db.now(), "the lease ran out while the process still ran the task"
        time.sleep(0.1)
    closing.join()
    assert len(set(seen)) >= 3  # renewed every quarter of the (1 s) lease
    with store.read() as session:
        left = session.get(db.Task, task_id).lease_until - db.now()
    assert dt.timedelta(0) < left <= dt.timedelta(seconds=STOPPING_LEASE)


def test_a_lease_runs_from_when_it_is_written_not_from_a_wait_for_the_lock(
        tmp_path) -> None:
    # Another writer holds SQLite's lock for longer than the lease: the claim waits for
    # it, and the lease it writes still runs for its length after that.
    store = db.Store(f"sqlite:///{tmp_path}/leases.sqlite")
    db.upgrade(store.engine)
    task_id = new_task(store)
    locked, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:
        with store.write() as session:
            session.execute(update(db.Task).where(db.Task.id == "none").values(worker="x"))
            locked.set()
            release.wait(10)

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    locked.wait(10)
    threading.Timer(1.5, release.set).start()
    try:
        assert task_leases.claim(store, task_id, "a", 1)
        assert not task_leases.claim(store, task_id, "b", 1)  # a's lease still runs
        assert _orphaned(store, task_id) == []
    finally:
        release.set()
        holder.join()
        store.engine.dispose()


def test_two_workers_of_one_host_and_pid_are_told_apart(store: db.Store) -> None:
    """Two containers on one host network may both run their worker as pid 1 under one
    hostname: their names still differ, so the second taking a task fences the first."""
    from murano_engine.server.worker import holder_name
    first, second = holder_name(), holder_name()
    assert first != second
    assert first.rsplit(":", 1)[0] == second.rsplit(":", 1)[0]  # same host and pid
    task_id = new_task(store)
    assert db.take_task(store, task_id, first)
    journal = DbJournalStore(store, task_id, holder=first)
    journal.append({"k": "0|id||0", "t": "end", "v": "x"})
    assert db.take_task(store, task_id, second)  # the broker gave the task on
    with pytest.raises(LeaseLost, match=f"no longer {first}'s: {second} took it over"):
        journal.append({"k": "0|id||1", "t": "end", "v": "y"})
    assert stored(store, task_id) == [0]
