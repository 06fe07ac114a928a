"""io.murano.Project and io.murano.User: who runs the task, and who owns the environment.

``getCurrent()`` describes the project (user) the task runs for (the task's
``project_id``/``user_id``), ``getEnvironmentOwner()`` the one its model
names. With keystone configured (``[heat] auth_url``) the fields are keystone's
(``/v3/projects/<id>``, ``/v3/users/<id>``; with no id, the engine's own
project and user); otherwise only ids are known: the name is the id, the
domain ``Default``, and a run with no ids at all (``murano-engine`` on the
command line) belongs to project ``local`` and to the user running it.
Keystone's answers go through the run's journal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from murano_engine.dsl import values
from murano_engine.dsl.natives import NativeCall, native_class, static
from murano_engine.dsl.objects import MuranoObject
from murano_engine.system import openstack

#: Keystone fields neither class keeps (everything else not named goes to ``extra``).
_DROPPED = {"project": ("links", "parent_id", "enabled"),
            "user": ("links", "enabled", "default_project_id")}


def _ids(call: NativeCall, kind: str, owner: bool) -> str | None:
    """The task's (or, with ``owner``, its model's) project or user id."""
    task = call.executor.services.get("task") or {}
    source = (task.get("model") or {}) if owner else task
    found = source.get(f"{kind}_id")
    return str(found) if found else None


def _from_keystone(call: NativeCall, kind: str, ident: str | None) -> dict[str, Any]:
    """The keystone record of a project or user (the session's own when ``ident`` is None)."""
    keystone = openstack.session(call)
    if ident is None:
        ident = (keystone.get_project_id() if kind == "project" else keystone.get_user_id())
    url = f"{openstack.identity_url(call)}/{kind}s/{ident}"
    body = openstack.get_json(keystone, url, f"keystone {kind} {ident}")
    record = body.get(kind)
    if not isinstance(record, dict) or "id" not in record:
        raise ValueError(f"keystone {kind} {ident}: the answer holds no {kind}")
    return record


def _fields(call: NativeCall, kind: str, owner: bool) -> dict[str, Any]:
    """The properties of the Project or User object to make."""
    ident = _ids(call, kind, owner)
    if openstack.keystone_configured(call):
        record = call.executor.outside.value(
            f"keystone.{kind}", ident or "", lambda: _from_keystone(call, kind, ident))
        extra = {k: v for k, v in record.items()
                 if k not in _DROPPED[kind] and k not in ("id", "name", "domain_id",
                                                          "description", "email")}
        fields = {"id": record["id"], "name": record.get("name") or record["id"],
                  "domain": record.get("domain_id") or "Default", "extra": extra}
        detail = "description" if kind == "project" else "email"
        fields[detail] = record.get(detail)
        return fields
    if ident is None:
        import getpass  # here: loading the class should not import getpass and termios
        ident = "local" if kind == "project" else getpass.getuser()
    return {"id": ident, "name": ident, "domain": "Default", "extra": {}}


def _new(call: NativeCall, class_name: str, props: Mapping[str, Any]) -> MuranoObject:
    executor = call.executor
    return executor.new_object(executor.loader.find_class(class_name),
                               props=values.freeze(dict(props)), caller=call.frame)


@native_class("io.murano.Project")
class Project:
    @static
    def getCurrent(call: NativeCall) -> MuranoObject:  # noqa: N802
        return _new(call, "io.murano.Project", _fields(call, "project", owner=False))

    @static
    def getEnvironmentOwner(call: NativeCall) -> MuranoObject:  # noqa: N802
        return _new(call, "io.murano.Project", _fields(call, "project", owner=True))


@native_class("io.murano.User")
class User:
    @static
    def getCurrent(call: NativeCall) -> MuranoObject:  # noqa: N802
        return _new(call, "io.murano.User", _fields(call, "user", owner=False))

    @static
    def getEnvironmentOwner(call: NativeCall) -> MuranoObject:  # noqa: N802
        return _new(call, "io.murano.User", _fields(call, "user", owner=True))
