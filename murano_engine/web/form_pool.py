"""Where the API evaluates packages' ``UI/ui.yaml``: off the request threads, in a bounded
pool of threads with a share per project, each evaluation within its own budget
(:mod:`murano_engine.web.form_budget`).

A project that already has its share of evaluations running gets a 429 at once, so a
hostile package ties up at most its own project's share of the pool, for at most one
budget each; a spent budget is a 400 that says which limit was met. Once
:data:`STOPPING` is set (SIGTERM), every evaluation ends at its next step, and the
pool's threads, daemons, keep no stopping process waiting.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from murano_engine.api.errors import ApiError
from murano_engine.backend.shares import ProjectShares
from murano_engine.dsl import concurrency
from murano_engine.web import form_budget

T = TypeVar("T")

#: set when the process stops: evaluations end at their next step
STOPPING = threading.Event()


class FormPool:
    """``workers`` evaluations at once, at most ``per_project`` of one project."""

    def __init__(self, workers: int, per_project: int, limits: form_budget.FormLimits
                 ) -> None:
        self.workers = workers
        self.per_project = per_project
        self.limits = limits
        self._jobs: queue.SimpleQueue[tuple[Future, Callable[[], Any]]] = queue.SimpleQueue()
        self._threads = 0
        self._lock = threading.Lock()
        self._shares = ProjectShares(None, per_project)

    def run(self, project_id: str, evaluate: Callable[[], T]) -> T:
        """``evaluate()`` in the pool (with the caller's context variables), within a
        fresh budget; the caller waits for it."""
        if self._shares.take(project_id) is not None:
            raise ApiError(f"the project already has {self.per_project} UI form evaluations "
                           f"running (its share of the pool); try again when they end",
                           status=429)
        with self._lock:
            if self._threads < self.workers:  # started as they are first needed
                self._threads += 1
                with concurrency.interpreter_stacks():  # it evaluates yaql
                    threading.Thread(target=self._work, name=f"ui-form-{self._threads}",
                                     daemon=True).start()
        done: Future = Future()
        context = contextvars.copy_context()
        self._jobs.put((done, lambda: context.run(self._spend, evaluate)))
        try:
            return done.result()
        finally:
            self._shares.free(project_id)

    def _work(self) -> None:
        while True:
            done, call = self._jobs.get()
            try:
                done.set_result(call())
            except BaseException as exc:  # noqa: BLE001 - the caller gets it
                done.set_exception(exc)

    def _spend(self, evaluate: Callable[[], T]) -> T:
        try:
            with form_budget.spending(self.limits.budget(), STOPPING):
                return evaluate()
        except form_budget.FormLimitError as exc:
            raise ApiError(f"the package's UI/ui.yaml met a limit: {exc}", status=400) \
                from None
