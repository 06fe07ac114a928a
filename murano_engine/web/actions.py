"""The actions of deployed applications, as the pages offer them: each with a form built
from the method's argument contracts (as ``/v1/schemas`` describes them), and the
posted form read back into the action's arguments.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from murano_engine.api.errors import NotFound


@dataclass
class Action:
    """One enabled action of an object of the model."""

    id: str
    object_id: str
    method: str
    title: str
    type: str  # the object's class as the model writes it: ``Class/version@package``

    @property
    def class_name(self) -> str:
        return self.type.split("/", 1)[0]


def objects(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every object (a mapping with a ``?`` header) in ``value``, outermost first; not
    templates (a ``template`` property holds the shape of objects to come)."""
    if isinstance(value, Mapping):
        if isinstance(value.get("?"), Mapping):
            yield value
        for key, item in value.items():
            if key != "template":
                yield from objects(item)
    elif isinstance(value, list):
        for item in value:
            yield from objects(item)


def actions_of(value: Any) -> list[Action]:
    """The enabled actions of the objects in ``value`` (an application and what it holds)."""
    found = []
    for obj in objects(value):
        header = obj["?"]
        for action_id, entry in (header.get("_actions") or {}).items():
            if isinstance(entry, Mapping) and entry.get("enabled", True):
                found.append(Action(str(action_id), str(header.get("id")),
                                    str(entry.get("name")),
                                    str(entry.get("title") or entry.get("name")),
                                    str(header.get("type") or "")))
    return found


def find_action(model: Any, action_id: str) -> Action:
    for action in actions_of(model):
        if action.id == action_id:
            return action
    raise NotFound(f"action {action_id} is not found in the environment")


def class_of(api: Any, ctx: Any, type_string: str) -> Any:
    """The MuranoPL class an object's ``Class/version@package`` names, from the catalog."""
    from murano_engine.backend.package_loader import CatalogLoader
    from murano_engine.dsl import errors as dsl_errors

    name, _, rest = type_string.partition("/")
    version, _, package = rest.partition("@")
    loader = CatalogLoader(api.store, api.settings.packages_cache, ctx.project_id,
                           api.interpreter)
    try:
        if package:
            return loader.find_package(package, f"={version or 0}").find_class(name)
        return loader.find_class(name)
    except (dsl_errors.NoClassFound, dsl_errors.NoPackageFound) as exc:
        raise NotFound(str(exc)) from None


def arguments_schema(api: Any, ctx: Any, action: Action) -> dict[str, Any]:
    """The JSON schema of an action's arguments (``/v1/schemas/CLASS/METHOD``'s)."""
    from murano_engine.api.class_schema import class_schema
    try:
        return class_schema(class_of(api, ctx, action.type), [action.method])[action.method]
    except KeyError as exc:
        raise NotFound(str(exc.args[0])) from None


@dataclass
class Argument:
    """One control of an action's form."""

    name: str
    kind: str  # string, integer, number, boolean or json (arrays, objects, anything else)
    required: bool
    value: str
    error: str | None = None


def _kind(schema: Mapping[str, Any]) -> str:
    types = schema.get("type")
    types = [types] if isinstance(types, str) else list(types or [])
    named = [t for t in types if t != "null"]
    return named[0] if len(named) == 1 and named[0] in (
        "string", "integer", "number", "boolean") else "json"


def _shown(value: Any, kind: str) -> str:
    if value is None:
        return ""
    if kind == "json":
        return json.dumps(value)
    if kind == "boolean":
        return "on" if value else ""
    return str(value)


def argument_fields(schema: Mapping[str, Any], posted: Mapping[str, str] | None = None,
                    errors: Mapping[str, str] | None = None) -> list[Argument]:
    """The form's controls: the posted values if any, else the contracts' defaults."""
    required = set(schema.get("required") or ())
    fields = []
    for name, spec in (schema.get("properties") or {}).items():
        kind = _kind(spec)
        value = posted.get(name, "") if posted is not None else _shown(spec.get("default"),
                                                                       kind)
        fields.append(Argument(name, kind, name in required, value,
                               (errors or {}).get(name)))
    return fields


def parse_arguments(schema: Mapping[str, Any], posted: Mapping[str, str]
                    ) -> tuple[dict[str, Any], dict[str, str]]:
    """The arguments a posted form gives, and an error for each field it gives badly.
    An empty optional field is left out (the method's default applies)."""
    required = set(schema.get("required") or ())
    args: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name, spec in (schema.get("properties") or {}).items():
        kind = _kind(spec)
        text = str(posted.get(name, "")).strip()
        if kind == "boolean":
            args[name] = bool(text)
            continue
        if not text:
            if name in required:
                errors[name] = "This argument is required."
            continue
        try:
            if kind == "integer":
                args[name] = int(text)
            elif kind == "number":
                args[name] = float(text)
            elif kind == "json":
                args[name] = json.loads(text)
            else:
                args[name] = text
        except ValueError:
            errors[name] = {"integer": "Enter a whole number.", "number": "Enter a number.",
                            "json": "Enter a JSON value (a list: [1, 2]; a mapping: "
                                    "{\"key\": \"value\"})."}[kind]
    return args, errors
