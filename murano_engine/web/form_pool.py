"""Where the API evaluates packages' ``UI/ui.yaml``: off the request threads, in a bounded
pool of threads with a share per project, each evaluation within its own budget
(:mod:`murano_engine.form_budget`).

A project that already has its share of evaluations running gets a 429 at once, so a
hostile package ties up at most its own project's share of the pool, for at most one
budget each; a spent budget is a 400 that says which limit was met.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from murano_engine import form_budget
from murano_engine.api.errors import ApiError

T = TypeVar("T")


class FormPool:
    """``workers`` evaluations at once, at most ``per_project`` of one project."""

    def __init__(self, workers: int, per_project: int, limits: form_budget.FormLimits
                 ) -> None:
        self.workers = workers
        self.per_project = per_project
        self.limits = limits
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="ui-form")
        self._lock = threading.Lock()
        self._running: dict[str, int] = {}
        self._stop = threading.Event()

    def run(self, project_id: str, evaluate: Callable[[], T]) -> T:
        """``evaluate()`` in the pool (with the caller's context variables), within a
        fresh budget; the caller waits for it."""
        with self._lock:
            running = self._running.get(project_id, 0)
            if running >= self.per_project:
                raise ApiError(f"the project already has {running} UI form evaluations "
                               f"running (its share of the pool); try again when they end",
                               status=429)
            self._running[project_id] = running + 1
        try:
            return self._executor.submit(contextvars.copy_context().run, self._spend,
                                         evaluate).result()
        finally:
            with self._lock:
                self._running[project_id] -= 1
                if not self._running[project_id]:
                    del self._running[project_id]

    def _spend(self, evaluate: Callable[[], T]) -> T:
        try:
            with form_budget.spending(self.limits.budget(), self._stop):
                return evaluate()
        except form_budget.FormLimitError as exc:
            raise ApiError(f"the package's UI/ui.yaml met a limit: {exc}", status=400) \
                from None

    def close(self) -> None:
        """Stop every evaluation at its next step and take no more."""
        self._stop.set()
        self._executor.shutdown(wait=False, cancel_futures=True)
