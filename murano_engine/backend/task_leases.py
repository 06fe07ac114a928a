"""Leases on the tasks ``murano-api`` runs in its own process (no broker).

Without a broker nothing outside the API process knows that a task runs: if
the process dies, its tasks would stay unfinished and their environments
taken for ever. So a process that runs a task holds a lease on it in the
database (``task.worker`` and ``task.lease_until``), renews it while the task
runs, and every API process takes over the unfinished tasks whose lease ran
out, resuming each from its journal (:mod:`murano_engine.backend.journal_store`):
the steps the dead process finished are replayed, not run again.

A lease changes hands only by a compare-and-set on the row, so two processes
never both take a task; leases are measured with the processes' own clocks,
which must agree to well within a lease (hosts kept in step by NTP). A
database is served either by API processes running tasks themselves or by
brokered workers (whose tasks hold no lease), never by both.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from sqlalchemy import and_, or_, select, update

from murano_engine.backend import db


def claim(store: db.Store, task_id: str, holder: str, seconds: float) -> bool:
    """Take the unfinished task ``task_id`` for ``holder`` for ``seconds``, if no lease on
    it is running (not even the holder's own: it runs the task already); whether it was
    taken."""
    with store.write() as session:
        now = _locked_now(session)
        taken = session.execute(
            update(db.Task)
            .where(db.Task.id == task_id, db.Task.finished.is_(None),
                   or_(db.Task.lease_until.is_(None), db.Task.lease_until < now))
            .values(worker=holder, lease_until=now + dt.timedelta(seconds=seconds))
            .execution_options(synchronize_session=False))
        return taken.rowcount == 1


def renew(store: db.Store, holder: str, task_ids: Iterable[str], seconds: float) -> set[str]:
    """Make ``holder``'s leases on ``task_ids`` end ``seconds`` from now (extended while
    their tasks run; shortened as the process is about to end, so another takes them over
    that much sooner); the ids of those another holder has taken over (a task deleted
    with its environment is not one)."""
    wanted = set(task_ids)
    if not wanted:
        return set()
    with store.write() as session:
        session.execute(
            update(db.Task)
            .where(db.Task.id.in_(wanted), db.Task.worker == holder)
            .values(lease_until=_locked_now(session) + dt.timedelta(seconds=seconds))
            .execution_options(synchronize_session=False))
        holders = session.execute(select(db.Task.id, db.Task.worker)
                                  .where(db.Task.id.in_(wanted)))
        return {task_id for task_id, worker in holders if worker != holder}


def _locked_now(session: db.DbSession) -> dt.datetime:
    """The time once ``session``'s transaction has begun: SQLite's write transaction waits
    for the database's lock as it begins (seconds, under load), and a lease computed
    before that wait would be written shorter than asked, or over already."""
    session.connection()
    return db.now()


def orphaned(store: db.Store, seconds: float) -> list[tuple[str, str | None]]:
    """The unfinished tasks no lease holds: ``(task id, its last holder)``, oldest first.
    A lease held runs out; a task never held is orphaned ``seconds`` after it was made
    (before, the process that made it is about to take it)."""
    now = db.now()
    with store.read() as session:
        rows = session.execute(
            select(db.Task.id, db.Task.worker)
            .where(db.Task.finished.is_(None),
                   or_(db.Task.lease_until < now,
                       and_(db.Task.lease_until.is_(None),
                            db.Task.started < now - dt.timedelta(seconds=seconds))))
            .order_by(db.Task.started))
        return [(task_id, worker) for task_id, worker in rows]
