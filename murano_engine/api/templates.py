"""Environment templates: saved service lists that new environments start from."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from sqlalchemy import or_, select

from murano_engine.api import environments
from murano_engine.api.auth import Context
from murano_engine.api.errors import Conflict, NotFound
from murano_engine.api.paths import remove_at, replace_at, resolve
from murano_engine.backend import db


def template_json(row: db.EnvironmentTemplate, with_services: bool = False) -> dict[str, Any]:
    body = {"id": row.id, "name": row.name, "tenant_id": row.tenant_id, "version": row.version,
            "is_public": row.is_public, "description_text": row.description_text,
            "created": row.created.isoformat(), "updated": row.updated.isoformat()}
    if with_services:
        body["services"] = row.description.get("services") or []
    return body


def _get(session: db.DbSession, context: Context, template_id: str,
         *, owned: bool = False) -> db.EnvironmentTemplate:
    row = session.get(db.EnvironmentTemplate, template_id)
    if row is None or not (row.tenant_id == context.project_id or context.is_admin
                           or (row.is_public and not owned)):
        raise NotFound(f"environment template {template_id} is not found")
    return row


def _unique(session: db.DbSession, tenant_id: str, name: str, exclude: str = "") -> None:
    if session.scalar(select(db.EnvironmentTemplate.id).where(
            db.EnvironmentTemplate.tenant_id == tenant_id,
            db.EnvironmentTemplate.name == name, db.EnvironmentTemplate.id != exclude)):
        raise Conflict(f"environment template {name!r} already exists")


def _services(value: list | None) -> list:
    return [environments.with_id(v) for v in value or []]


def list_templates(store: db.Store, context: Context,
                   params: dict[str, list[str]]) -> dict[str, Any]:
    query = select(db.EnvironmentTemplate).where(or_(
        db.EnvironmentTemplate.tenant_id == context.project_id,
        db.EnvironmentTemplate.is_public.is_(True))).order_by(db.EnvironmentTemplate.created)
    public = (params.get("is_public") or [None])[-1]
    if public is not None:
        query = query.where(db.EnvironmentTemplate.is_public.is_(public.lower() == "true"))
    with store.read() as session:
        return {"templates": [template_json(t) for t in session.scalars(query)]}


def create_template(store: db.Store, context: Context,
                    body: Mapping[str, Any]) -> dict[str, Any]:
    """A new template from a body valid against the ``Template`` schema."""
    name = body["name"]
    with store.write() as session:
        _unique(session, context.project_id, name)
        row = db.EnvironmentTemplate(
            name=name, tenant_id=context.project_id,
            is_public=bool(body.get("is_public", False)),
            description_text=str(body.get("description_text") or ""),
            description={"services": _services(body.get("services"))})
        session.add(row)
        session.flush()
        return template_json(row, True)


def show_template(store: db.Store, context: Context, template_id: str) -> dict[str, Any]:
    with store.read() as session:
        return template_json(_get(session, context, template_id), True)


def update_template(store: db.Store, context: Context, template_id: str,
                    body: Mapping[str, Any]) -> dict[str, Any]:
    """Change a template with a body valid against the ``TemplateChanges`` schema."""
    with store.write() as session:
        row = _get(session, context, template_id, owned=True)
        if "name" in body:
            _unique(session, row.tenant_id, body["name"], row.id)  # before the row changes
            row.name = body["name"]
        if "is_public" in body:
            row.is_public = bool(body["is_public"])
        if "description_text" in body:
            row.description_text = str(body["description_text"] or "")
        if "services" in body:
            row.description = {"services": _services(body["services"])}
        row.version += 1
        return template_json(row, True)


def delete_template(store: db.Store, context: Context, template_id: str) -> None:
    with store.write() as session:
        session.delete(_get(session, context, template_id, owned=True))


def template_services(store: db.Store, context: Context, template_id: str, path: str) -> Any:
    with store.read() as session:
        row = _get(session, context, template_id)
    return resolve(row.description.get("services") or [], path)


def edit_template_services(store: db.Store, context: Context, template_id: str, method: str,
                           path: str, value: Any = None) -> Any:
    with store.write() as session:
        row = _get(session, context, template_id, owned=True)
        services = list(row.description.get("services") or [])
        if method == "POST":
            added = _services(value if isinstance(value, list) else [value])
            services += added
            result: Any = added if isinstance(value, list) else added[0]
        elif method == "PUT":
            services = replace_at(services, path, environments.with_id(value))
            result = value
        else:
            services = remove_at(services, path)
            result = None
        row.description = {"services": services}
        row.version += 1
    return result


def _fresh_ids(value: Any) -> Any:
    """A copy of the services with new object ids (references follow)."""
    text_ids: dict[str, str] = {}

    def collect(node: Any) -> None:
        if isinstance(node, dict):
            header = node.get("?")
            if isinstance(header, dict) and isinstance(header.get("id"), str):
                text_ids[header["id"]] = db.new_id()
            for item in node.values():
                collect(item)
        elif isinstance(node, list):
            for item in node:
                collect(item)

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: rewrite(v) for k, v in node.items()}
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        if isinstance(node, str) and node in text_ids:
            return text_ids[node]
        return node

    collect(value)
    return rewrite(copy.deepcopy(value))


def create_environment(store: db.Store, context: Context, template_id: str,
                       body: Mapping[str, Any], env_class: str) -> dict[str, Any]:
    """A new environment with an open session holding the template's services."""
    with store.read() as session:
        row = _get(session, context, template_id)
    env = environments.create_env(store, context, body, env_class)
    opened = environments.configure(store, context, env.id)
    services = _fresh_ids(row.description.get("services") or [])
    environments.edit_services(store, context, env.id, opened["id"], "PUT", "/", services)
    return {"environment_id": env.id, "session_id": opened["id"], "name": env.name}


def clone_template(store: db.Store, context: Context, template_id: str,
                   body: Mapping[str, Any]) -> dict[str, Any]:
    name = body["name"]
    with store.write() as session:
        source = _get(session, context, template_id)
        if source.tenant_id != context.project_id and not source.is_public:
            raise NotFound(f"environment template {template_id} is not found")
        _unique(session, context.project_id, name)
        row = db.EnvironmentTemplate(name=name, tenant_id=context.project_id, is_public=False,
                                     description_text=source.description_text,
                                     description={"services": _fresh_ids(
                                         source.description.get("services") or [])})
        session.add(row)
        session.flush()
        return template_json(row, True)
