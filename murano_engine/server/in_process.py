"""The in-process worker: without a broker, murano-api runs each task in a thread
of its own process, with the same engine code the worker process uses."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from murano_engine.api import environments
from murano_engine.api.auth import Context
from murano_engine.api.workers import static_outcome
from murano_engine.backend import db
from murano_engine.backend.settings import Settings
from murano_engine.server.worker import EngineServices, StaticActions, run_engine_task

LOG = logging.getLogger(__name__)


class LocalDispatcher:
    """Runs each task in a thread of the API process."""

    def __init__(self, store: db.Store, settings: Settings, threads: int = 2) -> None:
        self.store = store
        self.settings = settings
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="engine")
        self.services = EngineServices(settings)
        self.static = StaticActions(store, settings, self.services)

    def submit(self, task: dict[str, Any]) -> None:
        self.pool.submit(self._run, task)

    def _run(self, task: dict[str, Any]) -> None:
        task_id = task["task_id"]
        try:
            result = run_engine_task(self.store, self.settings, task,
                                     lambda r: environments.store_report(self.store, task_id, r),
                                     self.services)
            environments.process_result(self.store, task_id, result)
        except Exception:  # noqa: BLE001 - never leave an environment taken
            LOG.exception("task %s failed in the API process", task_id)
            environments.release_stuck(self.store, task_id, "the engine failed; see the log")

    def call_static(self, context: Context, request: Mapping[str, Any]) -> Any:
        return static_outcome(self.static.call(context.project_id, request))

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=False)
        self.services.close()
