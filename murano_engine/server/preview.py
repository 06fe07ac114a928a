"""Previews: the plan of a session's deployment, made by an engine worker for murano-api.

A preview is a task (as :func:`murano_engine.api.environments.make_task` makes one)
run by :func:`murano_engine.engine.plan.run_plan` with the catalog's packages, in
the project's own configuration (its local cloud's state folder, its quotas) and
under a deploy's budget, its clock cut to ``static_action_timeout`` (nobody waits
longer for the answer). It makes, changes and sends nothing: the project's stacks
are read, its servers, broker users and keys left as they are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from murano_engine.backend import db
    from murano_engine.backend.settings import Settings
    from murano_engine.server.worker import EngineServices


def run_preview(store: db.Store, settings: Settings, services: EngineServices,
                task: Mapping[str, Any]) -> dict[str, Any]:
    """``{"status": 200, "result": plan}``, or a status and message when no plan could be
    made (its packages cannot be read). The plan runs as the task's project (the
    environment's, which may not be the caller's: an administrator's preview), with
    that project's catalog and cloud."""
    from murano_engine.backend.package_loader import CatalogLoader
    from murano_engine.engine.plan import run_plan
    from murano_engine.engine.services import project_config
    project = str(task.get("project_id"))
    loader = CatalogLoader(store, settings.packages_cache, project, services.interpreter)
    config = project_config(services.config, project)
    try:
        plan = run_plan(task, loader, config, services.budget(settings.static_action_timeout))
    except Exception as exc:  # noqa: BLE001 - every failure is answered
        return {"status": 503, "message": getattr(exc, "message", None) or str(exc)}
    return {"status": 200, "result": json.loads(json.dumps(plan, default=str))}


def late_preview(timeout: float) -> dict[str, Any]:
    """The answer to a preview that did not finish within ``timeout`` seconds."""
    return {"status": 504, "message": f"the preview did not finish within "
                                      f"static_action_timeout ({timeout:g} s)"}
