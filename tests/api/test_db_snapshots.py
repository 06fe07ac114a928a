"""A read sees one moment of the database: a write committed while it runs shows in
none of its statements (on PostgreSQL and on SQLite)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select, update
from sqlalchemy.exc import InternalError

from murano_engine.api import environments
from murano_engine.backend import db
from tests.api.test_journal_store import new_task
from tests.databases import throwaway_pg_database


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[db.Store]:
    if request.param == "sqlite":
        store = db.Store(f"sqlite:///{tmp_path / 'api.db'}")
        db.upgrade(store.engine)
        yield store
        store.engine.dispose()
        return
    with throwaway_pg_database() as url:
        store = db.Store(url)
        db.upgrade(store.engine)
        yield store
        store.engine.dispose()


def _deploying(store: db.Store) -> tuple[str, str, str]:
    """An environment held by a deploying session (as :func:`new_task` leaves it): the
    environment's and the session's ids, and who holds it."""
    task_id = new_task(store)
    with store.read() as session:
        task = session.get(db.Task, task_id)
        env = session.get(db.Environment, task.environment_id)
        return env.id, task.session_id, env.acquired_by


def _finish(store: db.Store, env_id: str, session_id: str) -> None:
    """What the end of a failed deployment writes, in one transaction."""
    with store.write() as session:
        session.execute(update(db.Session).where(db.Session.id == session_id)
                        .values(state="deploy failure"))
        session.execute(update(db.Environment).where(db.Environment.id == env_id)
                        .values(acquired_by=None))


def test_a_write_committed_during_a_read_shows_in_none_of_its_statements(
        store: db.Store) -> None:
    env_id, session_id, holder = _deploying(store)
    with store.read() as session:
        held = session.scalar(select(db.Environment.acquired_by)
                              .where(db.Environment.id == env_id))
        _finish(store, env_id, session_id)
        state = session.scalar(select(db.Session.state).where(db.Session.id == session_id))
    assert (held, state) == (holder, "deploying")
    with store.read() as session:  # the next read sees the write
        assert session.scalar(select(db.Session.state)) == "deploy failure"


def test_an_environment_status_and_its_holder_come_from_one_moment(store: db.Store) -> None:
    env_id, session_id, holder = _deploying(store)
    with store.read() as session:
        env = session.get(db.Environment, env_id)
        _finish(store, env_id, session_id)
        status = environments._statuses(session, [env])[env_id]
    assert (status, env.acquired_by) == ("deploying", holder)


def test_a_read_on_postgresql_cannot_write(store: db.Store) -> None:
    if store.engine.dialect.name != "postgresql":
        pytest.skip("SQLite has no read-only transactions")
    with store.read() as session, pytest.raises(InternalError, match="read-only"):
        session.execute(update(db.Environment).values(name="x"))
