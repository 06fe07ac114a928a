"""The API's deployment journals in the database (SQLite and the real PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import delete, exc, select, update

from murano_engine.api import environments
from murano_engine.backend import db
from murano_engine.backend.journal_store import DbJournalStore
from murano_engine.engine.journal import TAMPERED, Journal, JournalError


def new_task(store: db.Store) -> str:
    """A deploying environment's task, as :func:`environments.deploy` leaves it."""
    with store.write() as session:
        env = db.Environment(id=db.new_id(), name=db.new_id(), tenant_id="p",
                             description={"Objects": {}}, acquired_by="s")
        session.add(env)
        session.flush()
        row = db.Session(environment_id=env.id, user_id="u", state="deploying", version=0,
                         description={})
        session.add(row)
        session.flush()
        task = db.Task(id=db.new_id(), environment_id=env.id, session_id=row.id,
                       action={"object_id": env.id, "method": "deploy", "args": {}})
        session.add(task)
        return task.id


def stored(store: db.Store, task_id: str) -> list[int]:
    with store.read() as session:
        return list(session.scalars(select(db.JournalEntry.seq)
                                    .where(db.JournalEntry.task_id == task_id)
                                    .order_by(db.JournalEntry.seq)))


def test_entries_come_back_in_order_from_a_new_connection(store: db.Store, url: str) -> None:
    task_id = new_task(store)
    journal = DbJournalStore(store, task_id)
    entries = [{"k": f"0|id||{n}", "t": "end", "v": f"id-{n}"} for n in range(12)]
    for entry in entries:
        journal.append(entry)
    journal.close()
    other = db.Store(url)  # a new engine: nothing is served from this process's memory
    try:
        again = DbJournalStore(other, task_id)
        assert again.load() == entries
        again.append({"k": "0|id||12", "t": "end", "v": "id-12"})  # numbering goes on
        assert stored(other, task_id) == list(range(13))
        assert DbJournalStore(other, new_task(other)).load() == []
    finally:
        other.engine.dispose()


def test_odd_values_are_kept_as_text(store: db.Store) -> None:
    task_id = new_task(store)
    DbJournalStore(store, task_id).append({"k": "0|x||0", "t": "end", "v": Path("/a/b")})
    assert DbJournalStore(store, task_id).load()[0]["v"] == "/a/b"


def test_a_run_over_the_stored_entries_replays_them(store: db.Store) -> None:
    task_id = new_task(store)
    first = Journal(DbJournalStore(store, task_id))
    made = [first.new_id(), first.random_name()]
    assert first.recorded == 2 and not first.resuming
    second = Journal(DbJournalStore(store, task_id))
    assert second.resuming
    assert [second.new_id(), second.random_name()] == made
    assert second.replayed == 2
    third = second.new_id()  # past the recorded entries the run is live again
    assert third not in made
    assert Journal(DbJournalStore(store, task_id)).new_id() == made[0]
    assert len(stored(store, task_id)) == 3


def test_two_runs_appending_at_once_collide(store: db.Store) -> None:
    task_id = new_task(store)
    one, two = DbJournalStore(store, task_id), DbJournalStore(store, task_id)
    one.append({"k": "0|id||0", "t": "end", "v": "a"})
    with pytest.raises(exc.IntegrityError):
        two.append({"k": "0|id||0", "t": "end", "v": "b"})
    assert DbJournalStore(store, task_id).load() == [{"k": "0|id||0", "t": "end", "v": "a"}]


def test_entries_go_with_the_result(store: db.Store) -> None:
    done, failed, running = new_task(store), new_task(store), new_task(store)
    for task_id in (done, failed, running):
        DbJournalStore(store, task_id).append({"k": "0|id||0", "t": "end", "v": task_id})
    environments.process_result(store, done, {"action": {"result": None,
                                                         "isException": False},
                                              "model": {"Objects": {}}})
    environments.release_stuck(store, failed, "the engine stopped")
    assert stored(store, done) == [] and stored(store, failed) == []
    assert stored(store, running) == [0]
    # A run that appended after its result was stored (a worker the broker gave the
    # task again meanwhile) leaves nothing either once its own result comes back.
    DbJournalStore(store, done).append({"k": "0|id||1", "t": "end", "v": "late"})
    environments.process_result(store, done, {"action": {"result": None,
                                                         "isException": False},
                                              "model": {"Objects": {}}})
    assert stored(store, done) == []
    with store.read() as session:
        texts = [s.text for s in session.scalars(select(db.Status)
                                                 .where(db.Status.task_id == failed))]
        env_of_failed = session.get(db.Task, failed).environment_id
        assert session.get(db.Environment, env_of_failed).acquired_by is None
    assert texts == ["the engine stopped", "Deployment finished with errors"]


def test_entries_go_with_the_environment(store: db.Store) -> None:
    task_id = new_task(store)
    DbJournalStore(store, task_id).append({"k": "0|id||0", "t": "end", "v": "x"})
    with store.write() as session:
        session.delete(session.get(db.Environment, session.get(db.Task, task_id).environment_id))
    assert stored(store, task_id) == []


KEY = b"k" * 32


def rows(store: db.Store, task_id: str) -> list[dict]:
    with store.read() as session:
        return list(session.scalars(select(db.JournalEntry.entry)
                                    .where(db.JournalEntry.task_id == task_id)
                                    .order_by(db.JournalEntry.seq)))


def set_row(store: db.Store, task_id: str, seq: int, entry: dict) -> None:
    with store.write() as session:
        session.execute(update(db.JournalEntry).where(db.JournalEntry.task_id == task_id,
                                                      db.JournalEntry.seq == seq)
                        .values(entry=entry))


def recorded(store: db.Store) -> str:
    task_id = new_task(store)
    journal = Journal(DbJournalStore(store, task_id, KEY))
    journal.new_id()
    journal.effect("agent.call", "q", lambda: {"id": "plan-1"}, lambda intent: {"ok": 1})
    return task_id


def test_rows_edited_moved_removed_or_from_another_task_are_refused(store: db.Store) -> None:
    task_id = recorded(store)
    assert len(DbJournalStore(store, task_id, KEY).load()) == 3
    original = rows(store, task_id)
    assert all(len(row["d"]) == 32 for row in original)

    def refused(seq: int) -> None:
        with pytest.raises(JournalError) as caught:
            DbJournalStore(store, task_id, KEY)
        assert str(caught.value) == f"the journal of task {task_id}, entry {seq}: {TAMPERED}"

    set_row(store, task_id, 2, {**original[2], "v": {"ok": 0}})  # a forged result
    refused(2)
    set_row(store, task_id, 1, original[2])
    set_row(store, task_id, 2, original[1])  # two rows swapped
    refused(1)
    other = rows(store, recorded(store))
    set_row(store, task_id, 1, other[1])
    set_row(store, task_id, 2, other[2])  # the same entries, another task's chain
    refused(1)
    for seq, entry in enumerate(original):
        set_row(store, task_id, seq, entry)
    assert len(DbJournalStore(store, task_id, KEY).load()) == 3  # as it was: accepted
    with pytest.raises(JournalError):
        DbJournalStore(store, task_id, b"x" * 32)  # another key
    with store.write() as session:
        session.execute(delete(db.JournalEntry).where(db.JournalEntry.task_id == task_id,
                                                      db.JournalEntry.seq == 1))
    refused(2)


class _Crash(BaseException):
    """Stands for the process dying."""


class _DiesAfterFirstReport(DbJournalStore):
    """A journal that dies as it records the end of the run's first report: the report
    was stored, its end was not recorded."""

    def append(self, entry: dict) -> None:
        if "|report|" in entry["k"] and entry["t"] == "end":
            raise _Crash
        super().append(entry)


def test_a_report_a_resumed_run_sends_again_is_kept_once(store: db.Store,
                                                         tmp_path: Path) -> None:
    from murano_engine.dsl.packages import PackageLoader
    from murano_engine.engine.interpreter import build_interpreter
    from murano_engine.engine.tasks import run_task
    from tests.dsl.dsl_helpers import class_text, write_package

    write_package(tmp_path, "t.rep", {"Code": class_text("t.rep", "Code", """
        Methods:
          run:
            Scope: Public
            Body:
              - $reporter: new(sys:StatusReporter)
              - $reporter.report($this, one)
              - $reporter.report($this, two)
        """, sys="io.murano.system")})
    loader = PackageLoader([Path(__file__).resolve().parents[2] / "meta", tmp_path],
                           build_interpreter())
    task_id = new_task(store)
    task = {"id": "e1", "model": {"Objects": {"?": {"id": "e1", "type": "t.rep.Code"}}},
            "action": {"object_id": "e1", "method": "run"}}

    def reporter(report: dict) -> None:
        environments.store_report(store, task_id, report)

    with pytest.raises(_Crash):
        run_task(task, loader, reporter=reporter,
                 outside=Journal(_DiesAfterFirstReport(store, task_id)))
    result = run_task(task, loader, reporter=reporter,
                      outside=Journal(DbJournalStore(store, task_id)))
    assert not result["action"]["isException"], result
    with store.read() as session:
        texts = list(session.scalars(select(db.Status.text)
                                     .where(db.Status.task_id == task_id)))
    assert sorted(texts) == ["one", "two"]


def test_reports_are_kept_once_by_their_id_and_ids_not_the_engines_are_ignored(
        store: db.Store) -> None:
    task_id = new_task(store)
    for report_id in ["a" * 32, "a" * 32, "b" * 32, "not an id", None, "x" * 32, 7]:
        environments.store_report(store, task_id, {"text": str(report_id),
                                                    "report_id": report_id})
    with store.read() as session:
        kept = sorted(session.execute(select(db.Status.text, db.Status.id)
                                      .where(db.Status.task_id == task_id)).all())
    assert [text for text, _ in kept] == ["7", "None", "a" * 32, "b" * 32, "not an id",
                                          "x" * 32]
    assert dict(kept)["a" * 32] == "a" * 32
