"""The in-process worker: without a broker, murano-api runs each task in a thread
of its own process, with the same engine code the worker process uses.

Each task it runs is held under a lease in the database
(:mod:`murano_engine.backend.task_leases`), renewed while it runs. A keeper
thread renews the leases and, every quarter of a lease, takes over the
unfinished tasks whose lease ran out (their process died, or was frozen past
its lease) and resumes them from their journals; a process started again does
so for its own earlier tasks too. A run that cannot record a step (the database
went away) stops there, keeping its task; the keeper resumes it from its journal
once the database answers again. A process that stops (SIGTERM) stops its runs
at their next step and hands their tasks on with short leases.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import InterfaceError, OperationalError, SQLAlchemyError

from murano_engine.api import environments
from murano_engine.api.auth import Context
from murano_engine.api.workers import static_outcome
from murano_engine.backend import db, task_leases
from murano_engine.backend.journal_store import LeaseLost
from murano_engine.backend.settings import Settings
from murano_engine.dsl import concurrency
from murano_engine.engine.journal import Cancelled, Journal, RecordingFailed
from murano_engine.server.worker import (
    EngineServices,
    StaticActions,
    holder_name,
    run_engine_task,
)

LOG = logging.getLogger(__name__)
#: seconds a process that stops leaves its leases running (its threads end with it)
STOPPING_LEASE = 2.0
#: seconds between two looks at whether the database answers again, while runs wait for it
PAUSED_RETRY = 1.0
#: what a run raises when the database does not answer (not a fault of the task)
DATABASE_AWAY = (RecordingFailed, OperationalError, InterfaceError)


@dataclass
class _Held:
    """A task this process claimed and has not finished."""

    project: str = ""  # the project whose task it is (known once it is started)
    #: its run waiting for a thread: (arrival, task, how it is resumed)
    waiting: tuple[int, dict[str, Any], tuple[Any, ...]] | None = None
    run: Future | None = None  # its run, handed to a thread
    journal: Journal | None = None  # the journal of its run going on
    lost: bool = False  # another process took it over
    paused: bool = False  # its run stopped as the database went away: resumed here


class LocalDispatcher:
    """Runs each task in a thread of the API process, under a lease.

    Runs wait for a thread in a queue per project; a thread that frees takes the oldest
    run of the project that has fewest running: one project's many deployments do not
    keep another's waiting behind all of them.
    """

    def __init__(self, store: db.Store, settings: Settings, threads: int = 2) -> None:
        self.store = store
        self.settings = settings
        self.name = f"murano-api {holder_name()}"
        self.threads = threads
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="engine")
        self._arrivals = itertools.count()
        self.services = EngineServices(settings)
        self.static = StaticActions(store, settings, self.services)
        self._lock = threading.Lock()
        self._held: dict[str, _Held] = {}  # by task id
        self._stopping = threading.Event()  # no task is taken any more
        self._closed = threading.Event()  # the leases are no longer renewed
        self._wake = threading.Event()  # the keeper looks again at once (a run paused)
        self._renewed = time.monotonic()  # when the leases were last renewed
        self._keeper = threading.Thread(target=self._keep, name="task leases", daemon=True)
        self._keeper.start()

    def submit(self, task: dict[str, Any]) -> None:
        """Run a task the API stored; if the database does not answer as it is claimed,
        a keeper takes it over once it does (it was stored: it is not lost)."""
        try:
            claimed = self._claim(task["task_id"])
        except SQLAlchemyError as exc:
            LOG.warning("task %s waits for the database (%s); it is taken over once the "
                        "database answers", task["task_id"], exc)
            return
        if claimed:
            self._start(task)

    def _start(self, task: dict[str, Any], *resumed: Any) -> None:
        with self._lock:
            held = self._held.get(task["task_id"])
            if held is None:  # handed on by close() meanwhile
                return
            held.project = str(task.get("project_id"))
            held.waiting = (next(self._arrivals), task, resumed)
            refused = self._dispatch()
        for task_id in refused:
            self._leave(task_id)

    def _dispatch(self) -> list[str]:
        """Start waiting runs while threads are free (under ``_lock``); the tasks whose
        runs could not start (the pool was shut down: the process stops)."""
        refused = []
        while True:
            running = Counter(h.project for h in self._held.values() if h.run is not None)
            waiting = [(task_id, held) for task_id, held in self._held.items()
                       if held.waiting is not None]
            if not waiting or sum(running.values()) >= self.threads:
                return refused
            task_id, held = min(waiting, key=lambda item: (running[item[1].project],
                                                           item[1].waiting[0]))
            _, task, resumed = held.waiting
            held.waiting = None
            try:
                with concurrency.interpreter_stacks():  # a thread made here runs MuranoPL
                    held.run = self.pool.submit(self._run, task, *resumed)
            except RuntimeError:
                del self._held[task_id]
                refused.append(task_id)

    def _claim(self, task_id: str) -> bool:
        with self._lock:
            if task_id in self._held or self._stopping.is_set():
                return False
            if not task_leases.claim(self.store, task_id, self.name, self.settings.task_lease):
                LOG.info("task %s is finished or held by another process", task_id)
                return False
            self._held[task_id] = _Held()
            return True

    def _run(self, task: dict[str, Any], taken_over: bool = False,
             previous: str | None = None) -> None:
        task_id = task["task_id"]
        reporter = lambda r: environments.store_report(self.store, task_id, r)  # noqa: E731

        def begin(steps: int) -> None:
            if not taken_over:
                return
            if previous is None:
                text = (f"{self.name} took the task over: the process it was handed to "
                        f"stopped before starting it")
            elif previous == self.name:
                text = f"{self.name} took the task up again; {steps} steps come from its journal"
            else:
                text = (f"{self.name} took the task over from {previous}, which stopped; "
                        f"{steps} steps come from its journal")
            reporter({"id": task.get("id"), "text": text, "level": "info",
                      "timestamp": time.time()})
            LOG.info("task %s: %s", task_id, text)

        try:
            result = run_engine_task(self.store, self.settings, task, reporter,
                                     self.services, begin, self._journaled(task_id),
                                     self.name)
            environments.process_result(self.store, task_id, result, holder=self.name)
        except LeaseLost as exc:  # frozen past its lease: the process that took over goes on
            LOG.error("task %s stopped here: %s", task_id, exc)
        except DATABASE_AWAY as exc:  # neither failed nor handed on: resumed here later
            with self._lock:
                held = self._held.get(task_id)
                if held is not None and not held.lost and not self._stopping.is_set():
                    held.paused = True
            self._wake.set()  # the keeper then looks every PAUSED_RETRY
            LOG.error("task %s stopped: the database did not answer (%s); it resumes from "
                      "its journal once the database answers", task_id, exc)
        except Cancelled:  # the process stops: the task goes on in the next one
            with self._lock:  # (first: the keeper must not renew the lease _leave shortens)
                self._held.pop(task_id, None)
            self._leave(task_id)
        except Exception:  # noqa: BLE001 - never leave an environment taken
            LOG.exception("task %s failed in the API process", task_id)
            environments.release_stuck(self.store, task_id, "the engine failed; see the log",
                                       holder=self.name)
        finally:
            with self._lock:
                held = self._held.get(task_id)
                if held is not None:
                    held.journal = held.run = None
                    if not held.paused:
                        del self._held[task_id]
                refused = self._dispatch()
            for waiting_id in refused:
                self._leave(waiting_id)

    def _journaled(self, task_id: str) -> Callable[[Journal], None]:
        """Keeps the run's journal, to stop the run at its next step when the process
        stops (or at once, if it is stopping already)."""
        def keep(journal: Journal) -> None:
            journal.fence = lambda: self._fence(task_id)
            with self._lock:
                self._held[task_id].journal = journal
            if self._stopping.is_set():
                journal.cancel()
        return keep

    def _fence(self, task_id: str) -> None:
        """Stop a run before its next step once another process took its task over, or
        may have (this one could not renew its leases for most of a lease: it was frozen,
        or the database was away)."""
        held = self._held.get(task_id)
        if held is not None and held.lost:
            raise LeaseLost(f"another process took task {task_id} over from {self.name}")
        late = time.monotonic() - self._renewed
        if late > self.settings.task_lease * 0.75:
            raise LeaseLost(f"{self.name} renewed its leases {late:.0f} s ago; another "
                            f"process may have taken its tasks over")

    def _leave(self, task_id: str) -> None:
        """Hand a task stopped with the process to the next one: its report says so, and
        its lease ends soon (its run has ended: nothing of it runs on here)."""
        text = (f"{self.name} stopped before the task ended; an API process takes it over "
                f"and resumes it from its journal")
        LOG.info("task %s: %s", task_id, text)
        try:
            environments.store_report(self.store, task_id, {"text": text, "level": "info",
                                                            "timestamp": time.time()})
            task_leases.renew(self.store, self.name, [task_id], STOPPING_LEASE)
        except SQLAlchemyError as exc:  # its lease then runs out at its usual end
            LOG.warning("task %s: %s", task_id, exc)

    def _keep(self) -> None:
        """Renew this process's leases and resume the tasks no lease holds, every quarter
        of a lease (every PAUSED_RETRY while runs wait for the database); while the
        process stops, renew only (its runs still go on), until it ends."""
        while True:
            try:
                self._renew()
                if not self._stopping.is_set():
                    self._resume_paused()
                    self._resume_orphans()
            except SQLAlchemyError as exc:  # the database is away: tried again next round
                LOG.warning("task leases: the database is not reachable (%s)", exc)
            interval = self.settings.task_lease / 4
            if self._paused():  # runs wait for the database: look again soon
                interval = min(interval, PAUSED_RETRY)
            self._wake.wait(interval)
            self._wake.clear()
            if self._closed.is_set():
                return

    def _renew(self) -> None:
        asked = time.monotonic()
        lost = task_leases.renew(self.store, self.name, self._running(),
                                 self.settings.task_lease)
        with self._lock:
            for task_id in lost:
                if task_id in self._held:
                    self._held[task_id].lost = True
        for task_id in lost:
            LOG.error("task %s: another process took it over while this one still runs it "
                      "(its lease was not renewed in time); the run stops at its next step",
                      task_id)
        self._renewed = asked

    def _running(self) -> set[str]:
        """The tasks this process holds: running, waiting for a thread or for the
        database."""
        with self._lock:
            return set(self._held)

    def _paused(self) -> list[str]:
        """The tasks whose runs wait for the database."""
        with self._lock:
            return sorted(task_id for task_id, held in self._held.items() if held.paused)

    def _resume_paused(self) -> None:
        """Run again, from their journals, the tasks whose runs stopped as the database
        went away (the database answered the renewal just made)."""
        for task_id in self._paused():
            if self._stopping.is_set():
                return
            task = environments.stored_task(self.store, task_id)
            with self._lock:
                held = self._held[task_id]
                held.paused = False
                if task is None or held.lost:  # finished, deleted, taken over
                    del self._held[task_id]
                    continue
            LOG.info("task %s: the database answers again; resumed from its journal",
                     task_id)
            self._start(task, True, self.name)

    def _resume_orphans(self) -> None:
        for task_id, previous in task_leases.orphaned(self.store, self.settings.task_lease):
            if self._stopping.is_set():
                return
            task = environments.stored_task(self.store, task_id)
            if task is None or not self._claim(task_id):
                continue
            LOG.info("task %s: taken over from %s, resumed from its journal", task_id,
                     previous or "a process that stopped")
            self._start(task, True, previous)

    def call_static(self, context: Context, request: Mapping[str, Any]) -> Any:
        return static_outcome(self.static.call(context.project_id, request))

    def preview(self, context: Context, task: Mapping[str, Any]) -> Any:
        return static_outcome(self.static.preview(context.project_id, task))

    def close(self, grace: float = 0.0) -> bool:
        """Stop taking tasks, stop the running ones at their next step and wait up to
        ``grace`` seconds for them to end; whether they all did. Stopped tasks resume
        from their journals in the next API process; a task still running after
        ``grace`` is left to it too, once its shortened lease runs out (the caller then
        ends the process without waiting for its thread)."""
        self._stopping.set()
        self.pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            # the tasks whose runs never started (waiting for a thread), or stopped
            # already (paused)
            never_run = {task_id for task_id, held in self._held.items()
                         if held.paused or held.waiting is not None
                         or (held.run is not None and held.run.cancelled())}
            journals = [held.journal for task_id, held in self._held.items()
                        if held.journal is not None and task_id not in never_run]
            for task_id in never_run:
                del self._held[task_id]
        for journal in journals:
            journal.cancel()
        for task_id in sorted(never_run):
            self._leave(task_id)
        deadline = time.monotonic() + grace
        while self._running() and time.monotonic() < deadline:
            time.sleep(0.05)  # the keeper renews the leases meanwhile
        self._closed.set()
        self._wake.set()
        self._keeper.join()
        running = self._running()
        if running:
            try:
                task_leases.renew(self.store, self.name, running, STOPPING_LEASE)
            except SQLAlchemyError as exc:
                LOG.warning("could not shorten the leases of tasks %s: %s", sorted(running),
                            exc)
            LOG.warning("%d tasks are unfinished (%s); they resume from their journals when "
                        "an API process takes them over", len(running),
                        ", ".join(sorted(running)))
            return False
        self.services.close()
        return True
