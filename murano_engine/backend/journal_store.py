"""The API's deployment journals: a task's entries in the ``journal_entry`` table.

:class:`DbJournalStore` is the :class:`murano_engine.engine.journal.JournalStore` of
one task. A worker that takes a task another worker was running when it died
opens the same rows, so its run replays what the dead one recorded. The rows
go when the API stores the task's outcome (:func:`forget`). Each row carries
its digest (``"d"``), chained to the row before it from the task's id (see
:class:`murano_engine.engine.journal.Chain`): rows edited, reordered, removed or
copied from another task in the database are refused when a worker loads them.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from sqlalchemy import delete, insert, select

from murano_engine.backend import db
from murano_engine.engine.journal import TAMPERED, Cancelled, Chain, JournalError


class DbJournalStore:
    """The journal of task ``task_id``; each append is committed when it returns.

    Entries are numbered in append order. Two runs appending to one task's
    journal at once (a worker the broker took for dead while it still ran)
    collide on that number: the later append fails instead of interleaving.
    Digests are keyed with ``key`` (the journal key, see
    :func:`murano_engine.engine.journal.journal_key`); :class:`JournalError` names the
    first row that does not follow from the ones before it.
    """

    def __init__(self, store: db.Store, task_id: str, key: bytes | None = None,
                 holder: str | None = None) -> None:
        self.store = store
        self.task_id = task_id
        #: with a holder, an append is made only while the task is unfinished and that
        #: holder's (:mod:`murano_engine.backend.task_leases`): a run whose lease another
        #: process took over ends at its next step with :class:`LeaseLost`
        self.holder = holder
        self._lock = threading.Lock()
        self._chain = Chain(key, task_id.encode("utf-8"))
        with store.read() as session:
            rows = session.execute(select(db.JournalEntry.seq, db.JournalEntry.entry)
                                   .where(db.JournalEntry.task_id == task_id)
                                   .order_by(db.JournalEntry.seq)).all()
        self._entries: list[dict[str, Any]] = []
        for expected, (seq, stored) in enumerate(rows):
            entry = dict(stored) if isinstance(stored, dict) else {}
            digest = entry.pop("d", None)
            if seq != expected or not isinstance(digest, str) or \
                    not self._chain.follows(canonical(entry), digest):
                raise JournalError(f"the journal of task {task_id}, entry {seq}: {TAMPERED}")
            self._entries.append(entry)
        self._next = rows[-1].seq + 1 if rows else 0

    def load(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._entries)

    def append(self, entry: dict[str, Any]) -> None:
        # What a JSON column holds, as the journal file writes it (odd values as text).
        stored = json.loads(json.dumps(entry, default=str))
        with self._lock:
            with self._chain.tentative(), self.store.write() as session:
                digest = self._chain.seal(canonical(stored))
                if self.holder is not None:
                    self._check_held(session)
                session.execute(insert(db.JournalEntry).values(
                    task_id=self.task_id, seq=self._next, entry={**stored, "d": digest}))
            self._entries.append(stored)
            self._next += 1

    def _check_held(self, session: db.DbSession) -> None:
        row = session.execute(select(db.Task.worker, db.Task.finished)
                              .where(db.Task.id == self.task_id).with_for_update()).first()
        if row is None:
            why = "it is gone"
        elif row.finished is not None:
            why = "it is finished"
        elif row.worker != self.holder:
            why = f"{row.worker} took it over"
        else:
            return
        raise LeaseLost(f"task {self.task_id} is no longer {self.holder}'s: {why}")

    def close(self) -> None:
        """Nothing to release: every append used a pooled connection and gave it back."""


class LeaseLost(Cancelled):
    """The run's task was taken over by another process (this one was frozen past its
    lease): the run stops before its next step, recording nothing more."""


def canonical(entry: dict[str, Any]) -> bytes:
    """The bytes an entry's digest covers: its JSON with sorted keys (what a JSON column
    gives back may order them otherwise)."""
    return json.dumps(entry, sort_keys=True, separators=(",", ":")).encode("utf-8")


def forget(session: db.DbSession, task_id: str) -> None:
    """Delete the journal of a task whose outcome is stored (in that transaction)."""
    session.execute(delete(db.JournalEntry).where(db.JournalEntry.task_id == task_id))

