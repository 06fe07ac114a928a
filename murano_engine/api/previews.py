"""Previews of sessions: what deploying a session would do, made by an engine worker
(:meth:`murano_engine.api.workers.Dispatcher.preview`) as a plan that makes, changes
and sends nothing (:mod:`murano_engine.engine.plan`). Nothing is stored: the session
stays open, the environment is not taken, no deployment is counted."""

from __future__ import annotations

from typing import Any

from murano_engine.api import environments
from murano_engine.api.auth import Context
from murano_engine.api.errors import Forbidden, NotFound
from murano_engine.backend import db


def preview_task(store: db.Store, context: Context, env_id: str,
                 session_id: str | None) -> dict[str, Any]:
    """The task a deployment of the open session ``session_id`` would run (the caller's
    session, or any for an administrator); with no session, that of a deployment of
    the environment's model again (what the pages' Deploy does without changes)."""
    with store.read() as session:
        env = environments.get_env(session, context, env_id)
        if session_id is None:
            description = env.description or {}
        else:
            row = session.get(db.Session, session_id)
            if row is None or row.environment_id != env.id:
                raise NotFound(f"session {session_id} is not found in environment {env_id}")
            if row.user_id != context.user_id and not context.is_admin:
                raise Forbidden(f"session {session_id} belongs to another user")
            if row.state != "opened":
                raise Forbidden(f"session {session_id} is {row.state}; only an open session "
                                "is previewed")
            if row.version != env.version:
                raise Forbidden(f"session {session_id} is stale: the environment was "
                                "deployed since")
            description = row.description or {}
        action = None if description.get("Objects") is None else {
            "object_id": env_id, "method": "deploy", "args": {}}
        return environments.make_task(env, "preview", context.user_id, description, action)
