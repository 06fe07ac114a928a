"""Metadata: ``Meta:`` entries on packages, types, properties, methods and arguments.

Each entry is an object of a class with ``Usage: Meta``. The class says where
it may be attached (``Applies``), how often (``Cardinality``) and whether
descendants see it (``Inherited``). Objects are made per executor on first
read through reflection.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from murano_engine.dsl import errors
from murano_engine.dsl.classes import MuranoClass
from murano_engine.dsl.instructions import compile_data
from murano_engine.dsl.objects import MuranoObject, TypeRef

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

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
    """A type's own metas plus those its ancestors pass down."""
    return merged(cls, lambda c: build(executor, c.meta, c, "Type"))


def method_meta(executor: Executor, cls: MuranoClass, name: str) -> list[MuranoObject]:
    """The metas of method ``name`` declared in ``cls`` plus those its overridden
    declarations in the ancestors pass down."""
    def own(c: MuranoClass) -> list[MuranoObject] | None:
        method = c.methods.get(name)
        return build(executor, method.meta, c, "Method") if method is not None else None
    return merged(cls, own)


def property_meta(executor: Executor, cls: MuranoClass, name: str) -> list[MuranoObject]:
    """The metas of property ``name`` as :func:`method_meta` gathers a method's."""
    def own(c: MuranoClass) -> list[MuranoObject] | None:
        spec = c.properties.get(name)
        return build(executor, spec.meta, c, "Property") if spec is not None else None
    return merged(cls, own)


def merged(initial: MuranoClass,
           own: Callable[[MuranoClass], list[MuranoObject] | None]) -> list[MuranoObject]:
    """``initial``'s own metas, then what each ancestor passes down.

    An ancestor passes a meta down when its class is ``Inherited`` and, for a
    ``Cardinality: One`` class, no class between it and ``initial`` on that
    path already has one of the same meta class. A ``One`` meta class reached
    from two different classes is an error; an ancestor reached along two
    paths counts once.
    """
    found: list[tuple[MuranoClass, MuranoObject]] = []

    def walk(classes: list[MuranoClass], above: frozenset[MuranoClass]) -> None:
        for cls in classes:
            singles = set(above)
            for item in own(cls) or ():
                meta_cls = item.murano_class
                options = meta_cls.meta_options
                if cls is not initial and (not options.get("Inherited") or meta_cls in above):
                    continue
                if options.get("Cardinality", "One") == "One":
                    singles.add(meta_cls)
                found.append((cls, item))
            walk(cls.parents, frozenset(singles))

    walk([initial], frozenset())
    result: list[MuranoObject] = []
    seen: set[tuple[int, int]] = set()
    single_from: dict[MuranoClass, MuranoClass] = {}
    for cls, item in found:
        meta_cls = item.murano_class
        if meta_cls.meta_options.get("Cardinality", "One") == "One":
            holder = single_from.setdefault(meta_cls, cls)
            if holder is not cls:
                raise errors.DslInvalidOperationError(
                    f"meta {meta_cls.name} (Cardinality One) reaches {initial.name} from both "
                    f"{holder.name} and {cls.name}")
        if (id(cls), id(item)) not in seen:
            seen.add((id(cls), id(item)))
            result.append(item)
    return result
