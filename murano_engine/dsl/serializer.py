"""Writing objects back as an object model (``Objects``, ``ObjectsCopy``, ``Attributes``)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from murano_engine.dsl.classes import MODEL_USAGES, MuranoClass
from murano_engine.dsl.objects import MuranoObject, ObjectView, TypeRef, real_object


def type_string(cls: MuranoClass) -> str:
    return f"{cls.name}/{cls.package.version}@{cls.package.name}"


def serialize_model(root: MuranoObject | None) -> dict[str, Any]:
    """The model after a run: every object reachable through ownership from ``root``."""
    if root is None:
        return {"Objects": None, "ObjectsCopy": None, "Attributes": []}
    included = owned_tree(root)
    objects = dump_object(root, included=included, actions=True)
    attributes = [[obj.id, owner, name, _plain(value, included, obj)]
                  for obj in included
                  for (owner, name), value in sorted(obj.attributes.items())]
    return {"Objects": objects, "ObjectsCopy": copy.deepcopy(objects), "Attributes": attributes}


def owned_tree(root: MuranoObject) -> list[MuranoObject]:
    """``root`` and the objects written inline under it, in order."""
    found: list[MuranoObject] = []
    seen: set[int] = set()

    def visit(obj: MuranoObject) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        found.append(obj)
        for value in obj.props.values():
            for child in _objects_in(value):
                if child.owner is obj:
                    visit(child)

    visit(root)
    return found


def _objects_in(value: Any):
    obj = real_object(value)
    if obj is not None:
        yield obj
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _objects_in(item)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _objects_in(item)


def dump_object(obj: MuranoObject, mixed: bool = False,
                included: list[MuranoObject] | None = None, actions: bool = False
                ) -> dict[str, Any]:
    """One object as a model dict (``?`` header plus In/Out/InOut/Const properties)."""
    include_set = {id(o) for o in included} if included is not None else None
    header: dict[str, Any] = {"type": obj.murano_class.ref if mixed
                              else type_string(obj.murano_class), "id": obj.id}
    if obj.name:
        header["name"] = obj.name
    if obj.metadata is not None:
        header["metadata"] = _plain(obj.metadata, include_set, obj)
    header.update({k: _plain(v, include_set, obj) for k, v in obj.designer.items()})
    if actions:
        header["_actions"] = _actions(obj)
    if obj.destroyed:
        header["destroyed"] = True
    if obj.dependencies:
        header["dependencies"] = {"onDestruction": [
            {"subscriber": subscriber.id, "handler": handler}
            for subscriber, handler in obj.dependencies]}
    result: dict[str, Any] = {"?": header}
    for name, specs in obj.murano_class.all_properties().items():
        if specs[0].usage in MODEL_USAGES and name in obj.props:
            result[name] = _dump_value(obj.props[name], obj, mixed, include_set, included)
    return result


def _dump_value(value: Any, holder: MuranoObject, mixed: bool, include_set: set[int] | None,
                included: list[MuranoObject] | None) -> Any:
    obj = real_object(value)
    if obj is not None:
        if obj.owner is holder:
            return dump_object(obj, mixed, included, actions=included is not None)
        return obj.id
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if _dropped(item, include_set):
                continue
            out[_key(key)] = _dump_value(item, holder, mixed, include_set, included)
        return out
    if isinstance(value, (tuple, list, set, frozenset)):
        return [_dump_value(item, holder, mixed, include_set, included)
                for item in value if not _dropped(item, include_set)]
    if isinstance(value, TypeRef):
        return value if mixed else type_string(value.murano_class)
    return value


def _dropped(item: Any, include_set: set[int] | None) -> bool:
    obj = real_object(item)
    return obj is not None and include_set is not None and id(obj) not in include_set


def _key(key: Any) -> Any:
    if isinstance(key, TypeRef):
        return type_string(key.murano_class)
    return key


def _plain(value: Any, include_set: Any, holder: MuranoObject) -> Any:
    if isinstance(value, (MuranoObject, ObjectView)):
        return real_object(value).id
    if isinstance(value, TypeRef):
        return type_string(value.murano_class)
    if isinstance(value, Mapping):
        return {_key(k): _plain(v, include_set, holder) for k, v in value.items()}
    if isinstance(value, (tuple, list, set, frozenset)):
        return [_plain(v, include_set, holder) for v in value]
    return value


def _actions(obj: MuranoObject) -> dict[str, Any]:
    previous = obj.designer.get("_actions") or {}
    out = {}
    for name in obj.murano_class.public_methods():
        key = f"{obj.id}_{name}"
        out[key] = {"name": name, "enabled": (previous.get(key) or {}).get("enabled", True)}
    return out


def serialize_value(value: Any) -> Any:
    """An action result or a ``run`` result as plain JSON data."""
    obj = real_object(value)
    if obj is not None:
        return dump_object(obj)
    if isinstance(value, TypeRef):
        return type_string(value.murano_class)
    if isinstance(value, Mapping):
        return {_key(k): serialize_value(v) for k, v in value.items()}
    if isinstance(value, (tuple, list, set, frozenset)):
        return [serialize_value(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value
