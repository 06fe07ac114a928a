"""Environments, configuration sessions, services, deployments and actions.

An environment's ``description`` is its model: ``{"Objects": {..., "services":
[...]}, "Attributes": [...], "ObjectsCopy": ...}``. A session holds a draft
copy and the environment ``version`` it started from; deploying it takes the
environment (``acquired_by``) with one conditional UPDATE, so a stale session
or a second deployment is refused and nothing is lost.
"""

from __future__ import annotations

import copy
import json
import logging
import re
from collections.abc import Mapping
from typing import Any

import jsonpatch
from sqlalchemy import Text, bindparam, cast, func, or_, select, update
from sqlalchemy.exc import IntegrityError

from murano_engine.api import quotas
from murano_engine.api.auth import Context
from murano_engine.api.errors import BadRequest, Conflict, Forbidden, NotFound, TooLarge
from murano_engine.api.paths import insert_at, remove_at, replace_at, resolve
from murano_engine.api.storable import storable
from murano_engine.backend import db, journal_store
from murano_engine.dsl.reports import is_step

LOG = logging.getLogger(__name__)
BUSY = ("deploying", "deleting")
#: the ``entity`` (and level) of status rows that hold a deployment's steps, not reports
STEP = "step"
MODEL_PATCH_DENIED = ("?", "services")
#: the ids the engine gives its reports (:func:`store_report`)
REPORT_ID = re.compile("[0-9a-f]{32}")


# -- model helpers ---------------------------------------------------------------

def new_model(env_id: str, name: str, body: Mapping[str, Any], env_class: str) -> dict:
    objects: dict[str, Any] = {"?": {"id": env_id, "type": env_class}, "name": name,
                               "services": []}
    if body.get("region"):
        objects["region"] = body["region"]
    networks = body.get("defaultNetworks")
    objects["defaultNetworks"] = networks if networks is not None else default_networks(name)
    return {"Objects": objects, "Attributes": []}


def default_networks(name: str) -> dict[str, Any]:
    """What Murano gives an environment created without ``defaultNetworks``: its own network."""
    return {"environment": {"?": {"id": db.new_id(), "type": "io.murano.resources.NeutronNetwork"},
                            "name": f"{name}-network"},
            "flat": None}


def to_engine(description: Mapping[str, Any] | None) -> dict[str, Any]:
    """The stored model as the engine reads it (``services`` become ``applications``).

    ``ObjectsCopy`` too: deleting an environment destroys what it holds, and the
    engine finds the applications (owned by the environment, destroyed before
    its servers) under the environment class's own property name.
    """
    model = copy.deepcopy(dict(description or {}))
    objects = model.get("Objects")
    if isinstance(objects, dict):
        objects["applications"] = objects.pop("services", [])
    previous = model.get("ObjectsCopy")
    if isinstance(previous, dict) and "services" in previous:
        previous["applications"] = previous.pop("services")
    return model


def from_engine(model: Mapping[str, Any]) -> dict[str, Any]:
    stored = {k: model.get(k) for k in ("Objects", "Attributes", "ObjectsCopy")}
    for key in ("Objects", "ObjectsCopy"):
        objects = stored.get(key)
        if isinstance(objects, dict):
            objects["services"] = objects.pop("applications", None) or []
    return stored


def _services(description: Mapping[str, Any] | None) -> list:
    objects = (description or {}).get("Objects")
    return list(objects.get("services") or []) if isinstance(objects, dict) else []


# -- environments ----------------------------------------------------------------

# Built once (the values are bound parameters): building a statement costs more than
# running these small ones, and environments are read at every page load.
_SESSION_STATES = (select(db.Session.environment_id, db.Session.state, db.Session.version)
                   .where(db.Session.environment_id.in_(bindparam("ids", expanding=True)))
                   .order_by(db.Session.updated.desc()))
_ENVS_OF_TENANT = (select(db.Environment)
                   .where(db.Environment.tenant_id == bindparam("tenant"))
                   .order_by(db.Environment.created))
_ALL_ENVS = select(db.Environment).order_by(db.Environment.created)


def _statuses(session: db.DbSession, envs: list[db.Environment]) -> dict[str, str]:
    """Status of each environment; open sessions that went stale do not count."""
    versions = {e.id: e.version for e in envs}
    if not versions:
        return {}
    rows = session.execute(_SESSION_STATES, {"ids": list(versions)}).all()
    by_env: dict[str, list[str]] = {}
    for env_id, state, version in rows:
        if state != "opened" or version == versions[env_id]:
            by_env.setdefault(env_id, []).append(state)
    return {env_id: status_of(by_env.get(env_id, [])) for env_id in versions}


def status_of(states: list[str]) -> str:
    """Murano's environment status from its sessions' states, newest first."""
    for busy in BUSY:
        if busy in states:
            return busy
    finished = [s for s in states if s != "opened"]
    if finished and finished[0] in ("deploy failure", "delete failure"):
        return finished[0]
    return "pending" if "opened" in states else "ready"


def env_json(env: db.Environment, status: str) -> dict[str, Any]:
    objects = (env.description or {}).get("Objects") or {}
    return {"id": env.id, "name": env.name, "created": env.created.isoformat(),
            "updated": env.updated.isoformat(), "networking": {}, "status": status,
            "tenant_id": env.tenant_id, "version": env.version,
            "description_text": env.description_text, "region": objects.get("region"),
            "acquired_by": env.acquired_by}


def get_env(session: db.DbSession, context: Context, env_id: str) -> db.Environment:
    env = session.get(db.Environment, env_id)
    if env is None or (env.tenant_id != context.project_id and not context.is_admin):
        raise NotFound(f"environment {env_id} is not found")
    return env


def list_envs(store: db.Store, context: Context,
              params: Mapping[str, list[str]]) -> dict[str, Any]:
    all_tenants = (params.get("all_tenants") or ["false"])[-1].lower() == "true"
    tenant = (params.get("tenant") or [None])[-1]
    if (all_tenants or tenant) and not context.is_admin:
        raise Forbidden("listing other projects' environments needs the admin role")
    with store.read() as session:
        if tenant or not all_tenants:
            envs = session.scalars(_ENVS_OF_TENANT,
                                   {"tenant": tenant or context.project_id}).all()
        else:
            envs = session.scalars(_ALL_ENVS).all()
        statuses = _statuses(session, list(envs))
    return {"environments": [env_json(e, statuses[e.id]) for e in envs]}


def create_env(store: db.Store, context: Context, body: Mapping[str, Any], env_class: str,
               services: list | None = None) -> db.Environment:
    """A new environment from a body valid against the ``Environment`` schema (within the
    project's ``environments`` quota)."""
    name = body["name"]
    with store.write() as session:
        if session.scalar(select(db.Environment.id).where(
                db.Environment.tenant_id == context.project_id, db.Environment.name == name)):
            raise Conflict(f"environment {name!r} already exists")
        quotas.check_environments(session, store.quotas, context.project_id)
        env = db.Environment(id=db.new_id(), name=name, tenant_id=context.project_id)
        env.description = new_model(env.id, name, body, env_class)
        if services:
            env.description["Objects"]["services"] = services
        session.add(env)
    return env


def show_env(store: db.Store, context: Context, env_id: str,
             session_id: str | None) -> dict[str, Any]:
    with store.read() as session:
        env = get_env(session, context, env_id)
        body = env_json(env, _statuses(session, [env])[env_id])
        description = env.description
        if session_id:
            description = _session(session, env, session_id).description
    body["services"] = _services(description)
    return body


def rename_env(store: db.Store, context: Context, env_id: str,
               body: Mapping[str, Any]) -> dict[str, Any]:
    name = body["name"]
    with store.write() as session:
        env = get_env(session, context, env_id)
        if session.scalar(select(db.Environment.id).where(
                db.Environment.tenant_id == env.tenant_id, db.Environment.name == name,
                db.Environment.id != env_id)):
            raise Conflict(f"environment {name!r} already exists")
        env.name = name
        description = copy.deepcopy(env.description)
        if isinstance(description.get("Objects"), dict):
            description["Objects"]["name"] = name
        env.description = description
        status = _statuses(session, [env])[env_id]
    return env_json(env, status)


def last_status(store: db.Store, context: Context, env_id: str,
                session_id: str | None) -> dict[str, Any]:
    with store.read() as session:
        env = get_env(session, context, env_id)
        description = _session(session, env, session_id).description if session_id \
            else env.description
        ids = [s.get("?", {}).get("id") for s in _services(description) if isinstance(s, dict)]
        latest: dict[str, Any] = {i: None for i in ids if i}
        rows = session.scalars(select(db.Status).join(db.Task)
                               .where(db.Task.environment_id == env_id,
                                      db.Status.entity_id.in_(list(latest)))
                               .order_by(db.Status.created)).all()
        for row in rows:
            latest[row.entity_id] = status_json(row)
    return {"lastStatuses": latest}


def get_model(store: db.Store, context: Context, env_id: str, path: str,
              session_id: str | None) -> Any:
    with store.read() as session:
        env = get_env(session, context, env_id)
        description = _session(session, env, session_id).description if session_id \
            else env.description
    return resolve(description.get("Objects"), path)


def patch_model(store: db.Store, context: Context, env_id: str, session_id: str | None,
                patch: list[dict[str, Any]]) -> Any:
    """Apply a JSON patch (valid against the ``ModelPatch`` schema) to a session's model.

    Only the inside of the model changes: not its root, the environment's own
    header or its services (they have routes of their own), nor the id or type
    of any object already in it.
    """
    for change in patch:
        _check_patch_path(change.get("path"))
    with store.write() as session:
        env = get_env(session, context, env_id)
        draft = _editable(session, env, session_id)
        before = draft.description.get("Objects")
        if not isinstance(before, dict):
            raise Conflict(f"the model of session {draft.id} has no objects to patch")
        objects = copy.deepcopy(before)  # changed in place, one operation at a time
        for index, change in enumerate(patch):
            try:
                objects = jsonpatch.apply_patch(objects, [change], in_place=True)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                reason = "a part of its path is not in the model" \
                    if isinstance(exc, jsonpatch.JsonPointerException) \
                    else str(exc)  # (a pointer error's text holds the whole model)
                raise BadRequest(f"patch operation {index} ({change.get('op')} "
                                 f"{change.get('path')}) does not apply: {reason}") from None
        types = {object_id: object_type for object_id, (object_type, _) in
                 _objects(before).items()}
        for object_id, (object_type, path) in _objects(objects).items():
            if object_id in types and types[object_id] != object_type:
                raise Forbidden(f"the patch makes object {object_id} at {path} a {object_type}; "
                                f"it stays a {types[object_id]}")
        _refuse_foreign_ids(session, env.id, objects, types)
        draft.description = _bounded({**draft.description, "Objects": objects})
    return objects


def _held_elsewhere(session: db.DbSession, env_id: str, ids: list[str]) -> str | None:
    """The first of ``ids`` that is an object of another environment's model or of one
    of its sessions' models, else None."""
    needles = [f'"id": {json.dumps(i)}' for i in ids]  # as the JSON columns are written
    for table, owner in ((db.Environment, db.Environment.id),
                         (db.Session, db.Session.environment_id)):
        text = cast(table.description, Text)
        found = session.scalars(select(text).where(
            owner != env_id, or_(*(text.contains(n, autoescape=True) for n in needles)))
            .limit(1)).first()
        if found is not None:
            return next(i for i, n in zip(ids, needles, strict=True) if n in found)
    return None


def _refuse_foreign_ids(session: db.DbSession, env_id: str, objects: Any,
                        before: Mapping[Any, Any]) -> None:
    """Refuse (403) a model gaining an object whose id is another environment's, or an
    object of another environment's model or open sessions: a model is tenant input,
    and an id in it is a claim (the engine addresses servers, queues and keys by its
    own record of the environment, whatever ids a model holds; this keeps models
    from even claiming another's objects)."""
    new = sorted({str(i) for i in _objects(objects) if i not in before})
    if not new:
        return
    taken = session.scalars(select(db.Environment.id).where(
        db.Environment.id.in_(new), db.Environment.id != env_id).limit(1)).first() \
        or _held_elsewhere(session, env_id, new)
    if taken is not None:
        raise Forbidden(f"object id {taken!r} belongs to another environment; a model "
                        "holds its own objects only (leave '?/id' out for a new one)")


#: the most a session's model may grow to, as JSON (a request adds at most as much: many
#: requests must not grow one past what the engine and the database are sized for)
MODEL_LIMIT = 16 * 1024 * 1024


def _bounded(description: dict[str, Any]) -> dict[str, Any]:
    """``description``, refused (413) when its JSON is past :data:`MODEL_LIMIT` bytes."""
    size = len(json.dumps(description, separators=(",", ":"), ensure_ascii=False)
               .encode("utf-8"))
    if size > MODEL_LIMIT:
        raise TooLarge(f"the model would be {size} bytes; a model holds at most "
                       f"{MODEL_LIMIT} bytes (16 MiB)")
    return description


def _check_patch_path(path: Any) -> None:
    """Refuse a patch path outside what a model patch may change (403 naming it)."""
    if not isinstance(path, str):
        raise BadRequest(f"a patch path is a JSON pointer string, not {path!r}")
    try:
        parts = jsonpatch.JsonPointer(path).parts
    except jsonpatch.JsonPointerException as exc:
        raise BadRequest(f"the patch path {path!r} is not a JSON pointer: {exc}") from None
    if not parts:
        raise Forbidden("the patch path '' is the whole model; patch a part of it")
    if parts[0] in MODEL_PATCH_DENIED or "?" in parts:
        raise Forbidden(f"{path} cannot be changed through the model")


def _objects(value: Any) -> dict[Any, tuple[Any, str]]:
    """The type and JSON pointer of each object (by id) in the model ``value``."""
    return {header["id"]: (header.get("type"), where) for where, header in _headers(value)
            if isinstance(header["id"], str)}


def _escape(key: Any) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


# -- sessions --------------------------------------------------------------------

def session_json(row: db.Session) -> dict[str, Any]:
    return {"id": row.id, "environment_id": row.environment_id, "user_id": row.user_id,
            "state": row.state, "version": row.version, "created": row.created.isoformat(),
            "updated": row.updated.isoformat()}


def _session(session: db.DbSession, env: db.Environment, session_id: str) -> db.Session:
    row = session.get(db.Session, session_id)
    if row is None or row.environment_id != env.id:
        raise NotFound(f"session {session_id} is not found in environment {env.id}")
    return row


def _editable(session: db.DbSession, env: db.Environment, session_id: str | None) -> db.Session:
    if not session_id:
        raise BadRequest("the X-Configuration-Session header is required")
    row = _session(session, env, session_id)
    if row.state != "opened":
        raise Forbidden(f"session {session_id} is {row.state} and cannot be changed")
    if row.version != env.version:
        raise Forbidden(f"session {session_id} is stale: the environment was deployed since")
    return row


def configure(store: db.Store, context: Context, env_id: str) -> dict[str, Any]:
    with store.write() as session:
        env = get_env(session, context, env_id)
        if env.acquired_by:
            raise Forbidden(f"environment {env_id} is being deployed; try again later")
        row = db.Session(environment_id=env_id, user_id=context.user_id, state="opened",
                         version=env.version, description=copy.deepcopy(env.description))
        session.add(row)
        session.flush()
        return session_json(row)


def show_session(store: db.Store, context: Context, env_id: str,
                 session_id: str) -> dict[str, Any]:
    with store.read() as session:
        env = get_env(session, context, env_id)
        row = _session(session, env, session_id)
        if row.user_id != context.user_id and not context.is_admin:
            raise Forbidden(f"session {session_id} belongs to another user")
        if row.state == "opened" and row.version != env.version:
            raise Forbidden(f"session {session_id} is stale: the environment was deployed since")
        return session_json(row)


def delete_session(store: db.Store, context: Context, env_id: str, session_id: str) -> None:
    with store.write() as session:
        env = get_env(session, context, env_id)
        row = _session(session, env, session_id)
        if row.user_id != context.user_id and not context.is_admin:
            raise Forbidden(f"session {session_id} belongs to another user")
        if row.state in BUSY:
            raise Forbidden(f"session {session_id} is {row.state}; it cannot be deleted now")
        session.delete(row)


def pending_changes(store: db.Store, context: Context, env_id: str) -> dict[str, Any]:
    """What waits to be deployed in ``env_id``: the caller's open sessions whose model
    differs from the environment's, newest first (``mine``, their ids), how many other
    users' sessions do (``others``), and the environment's status counting no open
    session that changes nothing (``status``; :func:`status_of` counts every one)."""
    with store.read() as session:
        env = get_env(session, context, env_id)
        rows = session.execute(
            select(db.Session.id, db.Session.user_id, db.Session.state, db.Session.version)
            .where(db.Session.environment_id == env_id)
            .order_by(db.Session.updated.desc())).all()
        objects = (env.description or {}).get("Objects")
        states, mine, others = [], [], 0
        for session_id, user_id, state, version in rows:
            if state == "opened":
                if version != env.version or (session.get(db.Session, session_id).description
                                              or {}).get("Objects") == objects:
                    continue  # stale, or the environment as it is
                if user_id == context.user_id:
                    mine.append(session_id)
                else:
                    others += 1
            states.append(state)
    return {"mine": mine, "others": others, "status": status_of(states)}


# -- services --------------------------------------------------------------------

def get_services(store: db.Store, context: Context, env_id: str, path: str,
                 session_id: str | None) -> Any:
    with store.read() as session:
        env = get_env(session, context, env_id)
        description = _session(session, env, session_id).description if session_id \
            else env.description
    return resolve(_services(description), path)


def with_id(service: dict[str, Any]) -> dict[str, Any]:
    """A service (valid against the ``Service`` schema) given an object id if it has none."""
    service["?"].setdefault("id", db.new_id())
    return service


def edit_services(store: db.Store, context: Context, env_id: str, session_id: str | None,
                  method: str, path: str, value: Any = None) -> Any:
    """Add (POST), replace (PUT) or remove (DELETE) part of a session's services.

    At the root, ``value`` is valid against the ``ServiceOrServices`` (POST) or
    ``Services`` (PUT) schema.
    """
    with store.write() as session:
        env = get_env(session, context, env_id)
        draft = _editable(session, env, session_id)
        if not isinstance(draft.description.get("Objects"), dict):
            raise Conflict(f"the model of session {draft.id} has no environment object to "
                           "hold services")
        services = _services(draft.description)
        if "?" in path.strip("/").split("/"):
            raise Forbidden(f"services/{path.strip('/')}: an object's id and type cannot be "
                            f"changed")
        before = _objects(draft.description["Objects"])
        if method == "POST":
            if path.strip("/"):
                added = copy.deepcopy(value)
                services = insert_at(services, path, added)
            else:
                added = [with_id(v) for v in value] if isinstance(value, list) \
                    else with_id(value)
                services = services + (added if isinstance(added, list) else [added])
            result = added
        elif method == "PUT":
            if not path.strip("/"):
                services = [with_id(v) for v in value]
            else:
                services = replace_at(services, path, value)
            result = value
        else:
            services = remove_at(services, path)
            result = None
        description = copy.deepcopy(draft.description)
        description["Objects"]["services"] = services
        _check_services(services, before, description["Objects"])
        _refuse_foreign_ids(session, env.id, description["Objects"], before)
        draft.description = _bounded(description)
    return result


def _check_services(services: Any, before: Mapping[Any, tuple[Any, str]],
                    objects: Any) -> None:
    """Refuse services that are no objects, an object id held twice, an object made
    another type (as a model patch does)."""
    for index, service in enumerate(services if isinstance(services, list) else ()):
        header = service.get("?") if isinstance(service, dict) else None
        if not isinstance(header, dict) or not isinstance(header.get("id"), str) \
                or not isinstance(header.get("type"), str):
            raise BadRequest(f"services[{index}] is no object: it needs a '?' naming its "
                             f"id and type (strings)")
    seen: dict[str, str] = {}
    for where, item in _headers(objects):
        object_id = str(item["id"])
        if object_id in seen:
            raise BadRequest(f"object id {object_id!r} is at {seen[object_id]} and at "
                             f"{where}; an id is one object's")
        seen[object_id] = where
        kept = before.get(item["id"])
        if kept is not None and kept[0] != item.get("type"):
            raise Forbidden(f"object {object_id} at {where} would become a "
                            f"{item.get('type')}; it stays a {kept[0]}")


def _headers(value: Any) -> list[tuple[str, Mapping[str, Any]]]:
    """The JSON pointer and ``?`` header (with an id) of every object in ``value``."""
    found = []
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, dict):
            header = item.get("?")
            if isinstance(header, dict) and "id" in header:
                found.append((where or "/", header))
            stack.extend((f"{where}/{_escape(k)}", v) for k, v in item.items() if k != "?")
        elif isinstance(item, list):
            stack.extend((f"{where}/{i}", v) for i, v in enumerate(item))
    return found


# -- deployments -----------------------------------------------------------------

def status_json(row: db.Status) -> dict[str, Any]:
    return {"id": row.id, "task_id": row.task_id, "entity_id": row.entity_id,
            "entity": row.entity, "text": row.text, "level": row.level,
            "details": row.details, "timestamp": row.timestamp,
            "created": row.created.isoformat(), "updated": row.updated.isoformat()}


def deployment_state(finished: bool, levels: set[str]) -> str:
    suffix = "_w_errors" if "error" in levels else "_w_warnings" if "warning" in levels else ""
    if not finished:
        return "running" + suffix
    return "completed" + suffix if suffix else "success"


def _deployments(session: db.DbSession, env_ids: list[str]) -> list[dict[str, Any]]:
    tasks = session.scalars(select(db.Task).where(db.Task.environment_id.in_(env_ids))
                            .order_by(db.Task.created)).all()
    levels: dict[str, set[str]] = {}
    for task_id, level in session.execute(
            select(db.Status.task_id, db.Status.level).distinct()
            .where(db.Status.task_id.in_([t.id for t in tasks]),
                   db.Status.entity.is_distinct_from(STEP))).all():
        levels.setdefault(task_id, set()).add(level)
    out = []
    for task in tasks:
        failed = bool((task.result or {}).get("isException"))
        task_levels = levels.get(task.id, set()) | ({"error"} if failed else set())
        out.append({"id": task.id, "environment_id": task.environment_id,
                    "action": task.action, "result": task.result,
                    "started": task.started.isoformat(),
                    "finished": task.finished.isoformat() if task.finished else None,
                    "created": task.created.isoformat(), "updated": task.updated.isoformat(),
                    "state": deployment_state(task.finished is not None, task_levels)})
    return out


def list_deployments(store: db.Store, context: Context, env_id: str | None) -> dict[str, Any]:
    with store.read() as session:
        if env_id is not None:
            ids = [get_env(session, context, env_id).id]
        else:
            ids = list(session.scalars(select(db.Environment.id).where(
                db.Environment.tenant_id == context.project_id)))
        return {"deployments": _deployments(session, ids)}


def reports(store: db.Store, context: Context, env_id: str, task_id: str,
            service_ids: list[str]) -> dict[str, Any]:
    with store.read() as session:
        get_env(session, context, env_id)
        task = session.get(db.Task, task_id)
        if task is None or task.environment_id != env_id:
            raise NotFound(f"deployment {task_id} is not found in environment {env_id}")
        query = select(db.Status).where(db.Status.task_id == task_id,
                                        db.Status.entity.is_distinct_from(STEP))
        if service_ids:
            query = query.where(db.Status.entity_id.in_(service_ids))
        rows = session.scalars(query.order_by(db.Status.created)).all()
    return {"reports": [status_json(r) for r in rows]}


def steps(store: db.Store, context: Context, env_id: str, task_id: str) -> list[dict]:
    """The steps of a deployment (plans sent and answered, stacks pushed), oldest first,
    each with its ``timestamp`` (see :func:`murano_engine.dsl.reports.step`)."""
    with store.read() as session:
        get_env(session, context, env_id)
        rows = session.scalars(select(db.Status).where(
            db.Status.task_id == task_id, db.Status.entity == STEP)
            .order_by(db.Status.created)).all()
    out = []
    for row in rows:
        step = json.loads(row.details or "{}")
        step["timestamp"] = float(row.timestamp) if row.timestamp else None
        out.append(step)
    return out


def add_status(session: db.DbSession, task_id: str, text: str, level: str = "info",
               entity_id: str | None = None, details: str | None = None,
               timestamp: str | None = None, entity: str = "environment",
               status_id: str | None = None) -> None:
    session.add(db.Status(id=status_id or db.new_id(), task_id=task_id,
                          entity_id=storable(entity_id), entity=entity, text=storable(text),
                          level=level, details=storable(details),
                          timestamp=storable(timestamp)))


def _acquire(session: db.DbSession, env: db.Environment, session_id: str, version: int) -> None:
    """Take the environment for one deployment, or say why it cannot be taken."""
    taken = session.execute(update(db.Environment).where(
        db.Environment.id == env.id, db.Environment.acquired_by.is_(None),
        db.Environment.version == version).values(acquired_by=session_id))
    if taken.rowcount != 1:
        session.refresh(env)
        if env.acquired_by:
            raise Forbidden(f"environment {env.id} is being deployed by session "
                            f"{env.acquired_by}; wait until it finishes")
        raise Forbidden(f"session {session_id} is stale: the environment was deployed since")


def make_task(env: db.Environment, task_id: str, user_id: str, model: dict,
              action: dict | None) -> dict[str, Any]:
    """The task the engine runs (Murano's shape, without the caller's token: a task may
    cross the broker, and the engine acts with credentials of its own, the ``[heat]``
    service user's)."""
    model = {**to_engine(model), "project_id": env.tenant_id, "user_id": user_id}
    return {"id": env.id, "action": action, "model": model, "project_id": env.tenant_id,
            "user_id": user_id, "task_id": task_id}


def stored_task(store: db.Store, task_id: str) -> dict[str, Any] | None:
    """The task ``task_id`` as it was handed to the engine, made again from what the
    database keeps of it (None once it is finished or gone): to resume it."""
    with store.read() as session:
        task = session.get(db.Task, task_id)
        if task is None or task.finished is not None:
            return None
        env = session.get(db.Environment, task.environment_id)
        row = session.get(db.Session, task.session_id) if task.session_id else None
        if env is None:
            return None
        return make_task(env, task.id, row.user_id if row is not None else "",
                         task.description or {}, task.action)


def deploy(store: db.Store, context: Context, env_id: str, session_id: str) -> dict | None:
    """Hand a session to the engine; returns the task to dispatch (None if just deleted).
    A deployment past the project's ``deployments`` quota is refused; a deletion never."""
    with store.write() as session:
        env = get_env(session, context, env_id)
        row = _session(session, env, session_id)
        if row.state != "opened":
            raise Forbidden(f"session {session_id} is {row.state}; it cannot be deployed again")
        objects = row.description.get("Objects")
        if objects is not None:
            quotas.check_deployments(session, store.quotas, env.tenant_id)
        _acquire(session, env, session_id, row.version)
        if objects is None and not session.scalar(
                select(func.count()).select_from(db.Task)
                .where(db.Task.environment_id == env_id)):
            session.delete(env)
            return None
        action = None if objects is None else {"object_id": env_id, "method": "deploy",
                                                "args": {}}
        row.state = "deploying" if action else "deleting"
        task = db.Task(id=db.new_id(), environment_id=env_id, session_id=session_id,
                       description=row.description, action=action)
        session.add(task)
        session.flush()
        add_status(session, task.id, "Action deploy is scheduled" if action
                   else "Deletion is scheduled", entity_id=env_id)
        return make_task(env, task.id, context.user_id, row.description, action)


def delete_env(store: db.Store, context: Context, env_id: str, abandon: bool) -> dict | None:
    """Abandon (drop the rows) or delete through the engine; returns a task to dispatch."""
    with store.write() as session:
        env = get_env(session, context, env_id)
        deployed = session.scalar(select(func.count()).select_from(db.Task)
                                  .where(db.Task.environment_id == env_id))
        if abandon or not deployed:
            if env.acquired_by and not abandon:
                raise Forbidden(f"environment {env_id} is being deployed")
            session.delete(env)
            return None
        row = db.Session(id=db.new_id(), environment_id=env_id, user_id=context.user_id,
                         state="opened", version=env.version,
                         description={**env.description, "Objects": None})
        session.add(row)
        session.flush()
    return deploy(store, context, env_id, row.id)


def _find_action(objects: Any, action_id: str) -> tuple[str, str] | None:
    stack = [objects]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            header = value.get("?")
            if isinstance(header, dict):
                action = (header.get("_actions") or {}).get(action_id)
                if isinstance(action, dict) and action.get("enabled", True):
                    return header["id"], action["name"]
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return None


def call_action(store: db.Store, context: Context, env_id: str, action_id: str,
                args: dict[str, Any]) -> dict[str, Any]:
    """Run an object's public method on the deployed model in a fresh session (within
    the project's ``deployments`` quota)."""
    with store.write() as session:
        env = get_env(session, context, env_id)
        found = _find_action((env.description or {}).get("Objects"), action_id)
        if found is None:
            raise NotFound(f"action {action_id} is not found in environment {env_id}")
        quotas.check_deployments(session, store.quotas, env.tenant_id)
        object_id, method = found
        row = db.Session(id=db.new_id(), environment_id=env_id, user_id=context.user_id,
                         state="opened", version=env.version,
                         description=copy.deepcopy(env.description))
        session.add(row)
        session.flush()
        _acquire(session, env, row.id, row.version)
        row.state = "deploying"
        action = {"object_id": object_id, "method": method, "args": args}
        task = db.Task(id=db.new_id(), environment_id=env_id, session_id=row.id,
                       description=env.description, action=action)
        session.add(task)
        session.flush()
        add_status(session, task.id, f"Action {method} is scheduled", entity_id=object_id)
        return make_task(env, task.id, context.user_id, env.description, action)


def action_result(store: db.Store, context: Context, env_id: str, task_id: str) -> Any:
    with store.read() as session:
        get_env(session, context, env_id)
        task = session.get(db.Task, task_id)
        if task is None or task.environment_id != env_id:
            raise NotFound(f"task {task_id} is not found in environment {env_id}")
        return task.result


# -- results from the engine -----------------------------------------------------

def store_report(store: db.Store, task_id: str, report: Mapping[str, Any]) -> None:
    """Keep one status report of a running task. A report with an id (``report_id``,
    32 hex digits) is kept once however often it comes: a run resumed from its journal
    sends again the reports it sent but did not record, with their ids."""
    report_id = report.get("report_id")
    if not (isinstance(report_id, str) and REPORT_ID.fullmatch(report_id)):
        report_id = None
    try:
        with store.write() as session:
            task = session.get(db.Task, task_id)
            if task is None or (report_id is not None and session.get(db.Status, report_id)):
                return
            entity_id = report.get("id")
            if is_step(report):
                text, level, details, entity = (str(report["step"].get("name") or ""), STEP,
                                                 json.dumps(report["step"]), STEP)
            else:
                text, level, details = (str(report.get("text") or ""),
                                        str(report.get("level") or "info"),
                                        report.get("details"))
                entity = "environment" if entity_id == task.environment_id else "service"
            add_status(session, task_id, text, level, entity_id=entity_id, details=details,
                       timestamp=str(report.get("timestamp") or ""), entity=entity,
                       status_id=report_id)
    except IntegrityError:
        if report_id is None:
            raise
        # the same report stored at the same moment by another delivery of it


def process_result(store: db.Store, task_id: str, result: Mapping[str, Any],
                   note: str | None = None, holder: str | None = None) -> None:
    """Store the engine's result: the new model, the task result, the session state;
    ``note`` is an error report stored with it (why the engine did not finish the task).
    With ``holder``, only while the task's lease is that holder's: a process that lost
    it (frozen past it) stores nothing, and the run that took over goes on.

    The task's journal is deleted with it: the run it recorded has ended.
    """
    with store.write() as session:
        task = session.get(db.Task, task_id, with_for_update=holder is not None)
        if task is None:
            return
        if holder is not None and task.worker != holder:
            LOG.warning("task %s: the result of %s is dropped; %s took the task over",
                        task_id, holder, task.worker)
            return
        journal_store.forget(session, task_id)
        if task.finished is not None:
            return
        if note:
            add_status(session, task_id, note, "error", entity_id=task.environment_id)
        env = session.get(db.Environment, task.environment_id)
        outcome = dict(result.get("action") or {})
        failed = bool(outcome.get("isException"))
        errors = session.scalar(select(func.count()).select_from(db.Status).where(
            db.Status.task_id == task_id, db.Status.level == "error")) or 0
        warnings = session.scalar(select(func.count()).select_from(db.Status).where(
            db.Status.task_id == task_id, db.Status.level == "warning")) or 0
        deleting = task.action is None
        task.finished = db.now()
        task.result = outcome
        word = "Deletion" if deleting else "Deployment"
        text = f"{word} finished"
        if failed or errors:
            text += " with errors"
        elif warnings:
            text += " with warnings"
        add_status(session, task_id, text, "error" if failed else "info",
                   entity_id=task.environment_id)
        model = from_engine(result.get("model") or {})
        row = session.get(db.Session, task.session_id) if task.session_id else None
        if row is not None:
            failure = "delete failure" if deleting else "deploy failure"
            row.state = failure if failed or errors else "deployed"
        env.acquired_by = None
        if result.get("model") is None:
            return
        if deleting and model.get("Objects") is None and not failed:
            session.delete(env)
            return
        if result.get("loaded") is False and not deleting:
            # Nothing ran: what is deployed is as it was, and the model the session
            # deployed stays the environment's, to be mended in a new session (a first
            # deployment has no earlier model to fall back on).
            model["Objects"] = copy.deepcopy((task.description or {}).get("Objects"))
        env.description = {**(env.description or {}), **model}
        env.version += 1


def release_stuck(store: db.Store, task_id: str, message: str,
                  holder: str | None = None) -> None:
    """Fail a task the engine did not finish, saying why, so the environment is free
    (with ``holder``, as :func:`process_result`)."""
    process_result(store, task_id, {"action": {"isException": True, "result": {
        "message": message}}, "model": None}, note=message, holder=holder)


def give_up(store: db.Store, task_id: str, deliveries: int) -> None:
    """Fail a task ``deliveries`` workers took and none finished (RabbitMQ dead-lettered it)."""
    with store.read() as session:
        task = session.get(db.Task, task_id)
        worker = task.worker if task is not None else None
    last = f"; the last, worker {worker}, stopped while running it (see its log)" \
        if worker else ""
    release_stuck(store, task_id, f"the task was delivered {deliveries} times and no worker "
                                  f"finished it{last}")

