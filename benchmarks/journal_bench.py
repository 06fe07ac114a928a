"""What journaling a deployment costs: per plan in the command line's journal file, per
committed append in the API's database.

A plan sent through the journal (:class:`murano_engine.journal.Journal`) writes
two entries, each fdatasync'ed before the run goes on: its id before it is
sent, its result when it comes. Measured with a plan that costs nothing
itself, so the figure is the journal's alone; then the same plans replayed
from the file, as a resumed run does. Target: under 1 ms per plan.

Every call a run makes outside the engine is appended to the task's journal
(:class:`murano_engine.api.journal_store.DbJournalStore`) and committed before
the run goes on. Appends one entry at a time to a throwaway PostgreSQL
database on 127.0.0.1:5432 (synchronous commits, as configured there) and to a
SQLite file, then loads the journal back as a worker resuming the task does.
Target: an append well under the milliseconds a plan or a stack call takes.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import create_engine, text

from murano_engine.api import db
from murano_engine.api.journal_store import DbJournalStore
from murano_engine.journal import FileJournal, Journal
from tests.api.conftest import throwaway_pg_database

APPENDS = 1000
ENTRY = {"k": "0.1|agent.send|q-8c1f0e|3", "t": "end",
         "v": {"id": "6d1e0b3c2f9a4e5d8c7b6a5f4e3d2c1b", "result": {"exitCode": 0}}}


def new_task(store: db.Store) -> str:
    with store.write() as session:
        env = db.Environment(id=db.new_id(), name=db.new_id(), tenant_id="bench",
                             description={})
        session.add(env)
        session.flush()
        task = db.Task(id=db.new_id(), environment_id=env.id)
        session.add(task)
        return task.id


def measure(label: str, url: str) -> None:
    store = db.Store(url)
    try:
        db.upgrade(store.engine)
        task_id = new_task(store)
        journal = DbJournalStore(store, task_id)
        for _ in range(20):  # warm the pool and the statement caches
            journal.append(ENTRY)
        times = []
        for _ in range(APPENDS):
            start = time.perf_counter()
            journal.append(ENTRY)
            times.append(time.perf_counter() - start)
        start = time.perf_counter()
        loaded = len(DbJournalStore(store, task_id).load())
        load = time.perf_counter() - start
    finally:
        store.engine.dispose()
    times.sort()
    print(f"{label:>10}: append {statistics.mean(times) * 1000:.3f} ms mean, "
          f"{times[len(times) // 2] * 1000:.3f} ms median, "
          f"{times[int(len(times) * 0.99)] * 1000:.3f} ms p99; "
          f"load of {loaded} entries {load * 1000:.1f} ms")


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
    start = time.perf_counter()
    replay = Journal(FileJournal.open(folder / "bench.journal"))
    for index in range(plans):
        replay.effect("agent.call", f"q-{index % 4}", dict, lambda intent: None)
    replayed = (time.perf_counter() - start) / plans
    times.sort()
    print(f"{'file':>10}: {statistics.mean(times) * 1000:.3f} ms per plan mean, "
          f"{times[len(times) // 2] * 1000:.3f} ms median, "
          f"{times[int(len(times) * 0.99)] * 1000:.3f} ms p99 (2 synced entries); "
          f"replayed {replayed * 1000_000:.1f} us per plan")


def main() -> int:
    with tempfile.TemporaryDirectory(dir=Path.home()) as folder:
        measure_file(Path(folder))
    admin = create_engine("postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
    with admin.connect() as connection:
        settings = ", ".join(f"{name}={connection.execute(text(f'SHOW {name}')).scalar()}"
                             for name in ("fsync", "synchronous_commit"))
    admin.dispose()
    print(f"{APPENDS} journal appends, each committed ({settings} on PostgreSQL)")
    with throwaway_pg_database() as url:
        measure("postgresql", url)
    with tempfile.TemporaryDirectory() as folder:
        measure("sqlite", f"sqlite:///{Path(folder) / 'journal.sqlite'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
