"""Running an engine task: load a model, run an action, return the new model.

A task is what Murano's API hands to its engine::

    {"action": {"object_id": ID, "method": "deploy", "args": {}} or None,
     "model": {"Objects": ..., "ObjectsCopy": ..., "Attributes": [...],
               "SystemData": {...}, "project_id": ..., "user_id": ...},
     "id": ENVIRONMENT_ID, "project_id": ..., "user_id": ...}

Murano's tasks also carried the caller's token; these do not (a task may cross
the broker): the engine uses credentials of its own. ``action: None`` deletes
the environment. The result is
``{"action": {"result": ..., "isException": bool}, "model": {...}, "loaded": bool}``
(``loaded`` false: the model could not be loaded, so nothing ran).
Status reports go to ``reporter`` as they happen.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from murano_engine.dsl import collector, concurrency, errors, model, serializer
from murano_engine.dsl.budget import Budget
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.dsl.reports import report
from murano_engine.engine.journal import Journal, RecordingFailed

if TYPE_CHECKING:
    from murano_engine.dsl.reports import Reporter

LOG = logging.getLogger(__name__)
class DeletionFailed(Exception):
    """What an environment held did not all go: it is kept, with its model."""


def run_task(task: Mapping[str, Any], loader: PackageLoader, *,
             reporter: Reporter | None = None,
             services: Mapping[str, Any] | None = None,
             budget: Budget | None = None,
             outside: Journal | None = None) -> dict[str, Any]:
    """Run one task to the end, within ``budget``; errors become ``isException`` results,
    never escape (except :class:`murano_engine.engine.journal.Cancelled` when the run is
    stopped).

    With a journal (``outside``), every call leaving the engine is recorded in it, and
    the calls it already holds are answered from it: so a task cut short is resumed
    by running it again with the same journal. Reports already recorded are not sent
    again.
    """
    try:
        with concurrency.new_tree():
            return _run(task, loader, reporter, services, budget, outside)
    finally:
        if budget is not None:
            budget.release()


def _journaled(reporter: Reporter | None, outside: Journal | None) -> Reporter | None:
    """Reports as journal steps: one a resumed run recorded is not sent again, and one
    that cannot be stored stops the run (:class:`RecordingFailed`), as a step would.

    Each report carries an id (``report_id``) recorded before it is sent: a run that
    sent it and died before recording so sends it again with that id, and the API
    keeps one report of each id (:func:`murano_engine.api.environments.store_report`).
    """
    if reporter is None or outside is None:
        return reporter

    def send(entry: Mapping[str, Any], report_id: str) -> None:
        try:
            reporter({**entry, "report_id": report_id})
        except Exception as exc:
            raise RecordingFailed(f"a status report could not be stored: {exc}") from exc

    return lambda entry: outside.effect("report", "", lambda: secrets.token_hex(16),
                                        lambda report_id: send(entry, report_id))


def _run(task: Mapping[str, Any], loader: PackageLoader, reporter: Reporter | None,
         services: Mapping[str, Any] | None, budget: Budget | None,
         outside: Journal | None) -> dict[str, Any]:
    environment_id = task.get("id")
    incoming = dict(task.get("model") or {})
    action = task.get("action")
    reporter = _journaled(reporter, outside)
    executor = Executor(loader, services={**(services or {}), "reporter": reporter,
                                          "environment_id": environment_id,
                                          "task": task}, budget=budget, outside=outside)
    result: Any = None
    failed = False
    root = None
    loaded = False
    try:
        root = model.load_model(executor, incoming)
        loaded = True
        collector.collect(executor)
        if action is None:
            if root is not None:
                executor.roots = []
                collector.collect(executor)
                root = None
            if executor.destruction_failures:
                # What failed to go may still hold servers: the environment is kept
                # with its model (the deletion is tried again, or abandoned), never
                # forgotten with them running.
                loaded = False
                raise DeletionFailed(
                    "the environment could not be deleted: "
                    + "; ".join(executor.destruction_failures[:3])
                    + (f" (and {len(executor.destruction_failures) - 3} more)"
                       if len(executor.destruction_failures) > 3 else "")
                    + "; it is kept, to be deleted again (or abandoned)")
        else:
            target = executor.object_by_id(action["object_id"]) or root
            if target is None:
                raise errors.NoObjectFoundError(
                    f"object {action['object_id']!r} is not in the model")
            try:
                result = executor.call(target, action["method"], (),
                                       action.get("args") or {}, public_only=True)
            except concurrency.BranchStop:  # a plan stopped the action's own branch
                result = None
        collector.collect(executor)
    except Exception as exc:  # noqa: BLE001 - a failed task still returns its model
        failed = True
        result = describe_failure(exc)
        report(reporter, environment_id, environment_id, result["message"], "error",
               result.get("traceback"))
        LOG.warning("task for environment %s failed: %s", environment_id, result["message"],
                    exc_info=exc if LOG.isEnabledFor(logging.DEBUG) else None)
    if action is None and not failed and environment_id:
        _forget_keys(services or {}, str(environment_id))
    # When the model could not even be loaded nothing ran: the result is the
    # previous snapshot, so nothing earlier runs recorded is lost.
    new_model = serializer.serialize_model(root) if loaded else {
        "Objects": incoming.get("ObjectsCopy"), "ObjectsCopy": incoming.get("ObjectsCopy"),
        "Attributes": incoming.get("Attributes") or []}
    for key in ("SystemData", "project_id", "user_id"):
        if key in incoming:
            new_model[key] = incoming[key]
    return {"action": {"result": result if failed else serializer.serialize_value(result),
                       "isException": failed},
            "model": new_model, "loaded": loaded}


def _forget_keys(services: Mapping[str, Any], environment_id: str) -> None:
    """The environment is deleted: its signing keys go with it."""
    keys = getattr(services.get("agents"), "keys", None)
    if keys is not None:
        keys.remove(environment_id)


def describe_failure(exc: BaseException) -> dict[str, Any]:
    """An exception as data: names, message and the MuranoPL stack."""
    stack = errors.stack_of(exc)
    names = exc.names if isinstance(exc, errors.MuranoPlException) else [errors.python_name(exc)]
    message = str(exc) if isinstance(exc, errors.LoadError) else (
        getattr(exc, "message", None) or str(exc))
    return {"names": names, "message": message,
            "traceback": errors.format_stack(stack) if stack else None,
            "details": script_output(exc)}


#: How much of a failed script's output an error shows: its last lines.
OUTPUT_TAIL_LINES = 10


def script_output(exc: BaseException) -> str | None:
    """A failed script's exit code and the tail of its output, when the error (or one it
    was caused by) is an agent's report of one; else None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        info = getattr(current, "info", None)
        if info is None and isinstance(current, errors.MuranoPlException):
            info = current.extra
        details = info.get("details") if hasattr(info, "get") else None
        if hasattr(details, "get") and "exitCode" in details:
            lines = [f"exit code {details.get('exitCode')}"]
            for stream in ("stdout", "stderr"):
                text = str(details.get(stream) or "").rstrip()
                if text:
                    tail = text.splitlines()[-OUTPUT_TAIL_LINES:]
                    lines.append(f"{stream} (last {len(tail)} lines):")
                    lines.extend(f"  {line}" for line in tail)
            return "\n".join(lines)
        current = (getattr(current, "cause", None) or getattr(current, "native", None)
                   or current.__cause__)
    return None
