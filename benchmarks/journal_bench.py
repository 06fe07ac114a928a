"""What journaling a deployment costs: per plan in the command line's journal file, per
committed append in the API's database.

A plan sent through the journal (:class:`murano_engine.engine.journal.Journal`) writes
two entries, each fdatasync'ed before the run goes on: its id before it is
sent, its result when it comes. Measured with a plan that costs nothing
itself, so the figure is the journal's alone; then the same plans replayed
from the file, as a resumed run does. Target: under 1 ms per plan.

Every call a run makes outside the engine is appended to the task's journal
(:class:`murano_engine.backend.journal_store.DbJournalStore`) and committed before
the run goes on. Appends one entry at a time to a throwaway PostgreSQL
database on 127.0.0.1:5432 (synchronous commits, as configured there) and to a
SQLite file, then loads the journal back as a worker resuming the task does.
murano-api's own runs (no broker) append only while their process holds the
task: each append first reads (and locks) the task's row; timed apart.
Target: an append well under the milliseconds a plan or a stack call takes
(median under 2 ms on PostgreSQL, 5 ms on SQLite, whose commit syncs the file),
and the journal of a run loaded back in under 100 ms.

Each entry carries an HMAC-SHA256 digest chained to the one before it
(:class:`murano_engine.engine.journal.Chain`): its cost per entry is timed apart, in
batches of entries like a plan's result, when appended (the file's line; the
database's sorted JSON too) and when checked as a journal is loaded. Target:
under 20 us per entry.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import figures
from sqlalchemy import create_engine, text

from murano_engine.backend import db
from murano_engine.backend.journal_store import DbJournalStore, canonical
from murano_engine.engine.journal import Chain, FileJournal, Journal, journal_key
from tests.api.conftest import throwaway_pg_database

APPENDS = 1000
#: the task's holder, as murano-api names itself (task_leases)
HOLDER = "murano-api bench:1"
#: database -> append target (ms)
APPEND_TARGETS = {"PostgreSQL": 2, "SQLite": 5}
ENTRY = {"k": "0.1|agent.send|q-8c1f0e|3", "t": "end",
         "v": {"id": "6d1e0b3c2f9a4e5d8c7b6a5f4e3d2c1b", "result": {"exitCode": 0}}}


def new_task(store: db.Store) -> str:
    with store.write() as session:
        env = db.Environment(id=db.new_id(), name=db.new_id(), tenant_id="bench",
                             description={})
        session.add(env)
        session.flush()
        task = db.Task(id=db.new_id(), environment_id=env.id, worker=HOLDER)
        session.add(task)
        return task.id


def _appends(journal: DbJournalStore) -> list[float]:
    for _ in range(20):  # warm the pool and the statement caches
        journal.append(ENTRY)
    times = []
    for _ in range(APPENDS):
        start = time.perf_counter()
        journal.append(ENTRY)
        times.append(time.perf_counter() - start)
    return times


def measure(label: str, url: str) -> None:
    store = db.Store(url)
    try:
        db.upgrade(store.engine)
        task_id = new_task(store)
        times = _appends(DbJournalStore(store, task_id))
        held = _appends(DbJournalStore(store, new_task(store), holder=HOLDER))
        loads = []
        for _ in range(3):
            start = time.perf_counter()
            loaded = len(DbJournalStore(store, task_id).load())
            loads.append(time.perf_counter() - start)
        if loaded != APPENDS + 20:
            raise SystemExit(f"{label}: the journal holds {loaded} entries, not {APPENDS + 20}")
    finally:
        store.engine.dispose()
    figures.figure(f"{label}: committed journal append ({APPENDS} appends)", times, "ms",
                   APPEND_TARGETS[label], scale=1000)
    figures.figure(f"{label}: committed journal append of a held task (the holder checked "
                   f"first, as murano-api's own runs append; {APPENDS} appends)", held, "ms",
                   APPEND_TARGETS[label], scale=1000)
    figures.figure(f"{label}: load of {loaded} entries (a worker resuming)", loads, "ms", 100,
                   scale=1000)


def measure_file(folder: Path, plans: int = 1000) -> None:
    result = {"result": {"exitCode": 0, "stdout": "x" * 200}}
    store = FileJournal.create(folder / "bench.journal", {"command": "deploy"})
    journal = Journal(store)
    times = []
    for index in range(plans):
        start = time.perf_counter()
        journal.effect("agent.call", f"q-{index % 4}", lambda: {"id": "6d1e0b3c2f9a4e5d"},
                       lambda intent: result)
        times.append(time.perf_counter() - start)
    store.close()
    replay = Journal(FileJournal.open(folder / "bench.journal"))
    replayed = []
    for index in range(plans):
        start = time.perf_counter()
        replay.effect("agent.call", f"q-{index % 4}", dict, lambda intent: None)
        replayed.append(time.perf_counter() - start)
    figures.figure(f"file: a plan through the journal ({plans} plans, 2 synced entries each)",
                   times, "ms", 1, scale=1000)
    figures.figure("file: a plan replayed from the journal", replayed, "us", 100, scale=1e6)


DIGEST_BATCH = 1000
DIGEST_RUNS = 20


def measure_digest(key: bytes) -> None:
    """The chained digest's own cost per entry: sealing, checking, the database's form."""
    entry = {"k": "0.1|agent.call|q-8c1f0e|3", "t": "end",
             "v": {"result": {"exitCode": 0, "stdout": "x" * 200}}}
    body = json.dumps(entry, separators=(",", ":")).encode()

    def seal() -> None:
        chain = Chain(key)
        for _ in range(DIGEST_BATCH):
            chain.seal(body)

    sealed = Chain(key)
    digests = [sealed.seal(body) for _ in range(DIGEST_BATCH)]

    def check() -> None:
        chain = Chain(key)
        for digest in digests:
            if not chain.follows(body, digest):
                raise SystemExit("a digest did not check out")

    def seal_row() -> None:
        chain = Chain(key, b"task")
        for _ in range(DIGEST_BATCH):
            chain.seal(canonical(entry))

    per_entry = 1e6 / DIGEST_BATCH
    for name, func in (("file: digest of an entry appended", seal),
                       ("file: digest of an entry checked on load", check),
                       ("database: digest of an entry appended (sorted JSON + HMAC)",
                        seal_row)):
        figures.figure(name, figures.timed(func, DIGEST_RUNS), "us", 20, scale=per_entry)


def main() -> int:
    figures.method(f"HMAC-SHA256 chain of journal entries: {DIGEST_RUNS} runs of "
                   f"{DIGEST_BATCH} entries of a plan's result, time per entry")
    with tempfile.TemporaryDirectory(dir=Path.home()) as folder:
        measure_digest(journal_key(Path(folder) / "journal.key") or b"")
    figures.method("file journal of the command line: every plan timed (median and spread)")
    with tempfile.TemporaryDirectory(dir=Path.home()) as folder:
        measure_file(Path(folder))
    admin = create_engine("postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
    with admin.connect() as connection:
        settings = ", ".join(f"{name}={connection.execute(text(f'SHOW {name}')).scalar()}"
                             for name in ("fsync", "synchronous_commit"))
    admin.dispose()
    figures.method(f"the API's journal: {APPENDS} appends each committed and timed ({settings} "
                   f"on PostgreSQL), then 3 loads")
    with throwaway_pg_database() as url:
        measure("PostgreSQL", url)
    with tempfile.TemporaryDirectory() as folder:
        measure("SQLite", f"sqlite:///{Path(folder) / 'journal.sqlite'}")
    figures.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
