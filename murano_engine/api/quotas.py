"""The API's side of the projects' quotas (:mod:`murano_engine.engine.quotas`):
environments, packages and running deployments, counted in the database.

Each check runs in the write transaction that would make the new row, after
:func:`hold_project`: two requests of one project at once are counted one after the
other, so they cannot both pass the last free place. A project past a quota gets a
:class:`~murano_engine.api.errors.QuotaExceeded` (403) naming the quota and its value,
and the transaction, rolled back, has made nothing.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import Select, func, select, text
from sqlalchemy.orm import Session as DbSession

from murano_engine.api.errors import QuotaExceeded
from murano_engine.backend import db
from murano_engine.engine.quotas import QuotaTable

#: what each quota counts, and what a refused request did not do
_COUNTED = {
    "environments": ("environment(s)", "the environment was not created"),
    "packages": ("package(s)", "the package was not added"),
    "deployments": ("deployment(s) running",
                    "the deployment was not started: try again when one ends"),
}


def hold_project(session: DbSession, project: str) -> None:
    """Count ``project``'s rows alone until the transaction ends: on PostgreSQL a lock of
    the project's own (an advisory one); SQLite's write transactions are one at a time."""
    if session.get_bind().dialect.name == "postgresql":
        key = int.from_bytes(hashlib.sha256(b"murano-quota:" + project.encode()).digest()[:8],
                             "big", signed=True)
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})


def _check(session: DbSession, quotas: QuotaTable, project: str, name: str,
           counted: Select, held: bool = True) -> None:
    limit = quotas.of(project).limit(name)
    if limit is None:
        return
    if held:
        hold_project(session, project)
    in_use = session.scalar(counted) or 0
    if in_use >= limit:
        what, undone = _COUNTED[name]
        raise QuotaExceeded(f"Quota exceeded: project {project} has {in_use} {what} and its "
                            f"{name} quota is {limit}; {undone}",
                            name=name, limit=limit, in_use=in_use)


def check_environments(session: DbSession, quotas: QuotaTable, project: str) -> None:
    """Refuse one more environment for ``project`` past its ``environments`` quota."""
    _check(session, quotas, project, "environments",
           select(func.count()).select_from(db.Environment)
           .where(db.Environment.tenant_id == project))


def check_packages(session: DbSession, quotas: QuotaTable, project: str,
                   held: bool = True) -> None:
    """Refuse one more package owned by ``project`` past its ``packages`` quota (without
    ``held``, a look ahead of the check that counts: the project is not held)."""
    _check(session, quotas, project, "packages",
           select(func.count()).select_from(db.Package).where(db.Package.owner_id == project),
           held)


def check_deployments(session: DbSession, quotas: QuotaTable, project: str) -> None:
    """Refuse one more deployment or action of ``project`` while as many as its
    ``deployments`` quota are unfinished (running, or waiting to run)."""
    _check(session, quotas, project, "deployments",
           select(func.count()).select_from(db.Task)
           .join(db.Environment, db.Task.environment_id == db.Environment.id)
           .where(db.Environment.tenant_id == project, db.Task.finished.is_(None)))
