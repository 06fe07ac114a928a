"""Metadata: ``Meta:`` entries on packages, types, properties, methods and arguments.

Each entry is an object of a class with ``Usage: Meta``. The class says where
it may be attached (``Applies``), how often (``Cardinality``) and whether
descendants see it (``Inherited``). Objects are made per executor on first
read through reflection.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from murano_engine.dsl import errors
from murano_engine.dsl.classes import MuranoClass
from murano_engine.dsl.instructions import compile_data
from murano_engine.dsl.objects import MuranoObject, TypeRef

if TYPE_CHECKING:
    from murano_engine.dsl.executor import Executor


def entries(raw: Any) -> list[tuple[Any, Any]]:
    """``Meta:`` as (type name or reference, property values) pairs."""
    if raw is None:
        return []
    items = raw if isinstance(raw, list) else [raw]
    found: list[tuple[Any, Any]] = []
    for item in items:
        if isinstance(item, (str, TypeRef)):
            found.append((item, {}))
        elif isinstance(item, Mapping):
            found.extend((key, value) for key, value in item.items())
        else:
            found.append((item, {}))
    return found


def build(executor: Executor, raw: Any, scope: MuranoClass, target: str) -> list[MuranoObject]:
    """The meta objects of one entity, checked against Applies and Cardinality."""
    cache = executor.meta_cache
    key = (id(raw), scope, target)
    if key in cache:
        return cache[key]
    objects: list[MuranoObject] = []
    seen_once: set[str] = set()
    frame = executor.class_frame(scope)
    for type_value, props in entries(raw):
        if isinstance(type_value, TypeRef):
            cls = type_value.murano_class
        elif hasattr(type_value, "evaluate"):
            cls = type_value.evaluate(frame.context).murano_class
        else:
            cls = scope.resolve_type(str(type_value))
        if cls.usage != "Meta":
            raise errors.DslInvalidOperationError(f"{cls.name} is not a meta class")
        applies = cls.meta_options.get("Applies", "All")
        targets = applies if isinstance(applies, list) else [applies]
        if "All" not in targets and target not in targets:
            raise errors.DslInvalidOperationError(
                f"meta {cls.name} cannot be attached to a {target}")
        if cls.meta_options.get("Cardinality", "One") == "One":
            if cls.name in seen_once:
                raise errors.DslInvalidOperationError(
                    f"meta {cls.name} is attached twice to one {target}")
            seen_once.add(cls.name)
        values = compile_data(props or {})(frame.context)
        objects.append(executor.new_object(cls, props=values))
    cache[key] = objects
    return objects


def type_meta(executor: Executor, cls: MuranoClass) -> list[MuranoObject]:
    """A type's own metas plus the inherited ones of its ancestors."""
    own = build(executor, cls.meta, cls, "Type")
    names = {m.murano_class.name for m in own}
    inherited: list[MuranoObject] = []
    from_parents: dict[str, MuranoClass] = {}
    for parent in cls.parents:
        for meta_obj in type_meta(executor, parent):
            options = meta_obj.murano_class.meta_options
            if not options.get("Inherited"):
                continue
            name = meta_obj.murano_class.name
            if options.get("Cardinality", "One") == "One":
                if name in names:
                    continue
                if name in from_parents and from_parents[name] is not parent:
                    raise errors.DslInvalidOperationError(
                        f"meta {name} reaches {cls.name} from two parents")
                from_parents[name] = parent
            inherited.append(meta_obj)
    return own + inherited
