"""Frozen values: every MuranoPL value has copy semantics.

Lists become tuples and dicts become :class:`FrozenDict`, so a value handed
from one variable to another can never be changed behind the first one's back.
Collections are capped at the iterator limit, and nesting at :data:`MAX_DEPTH`,
while they are frozen.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from yaql.language import exceptions as yaql_exceptions
from yaql.language.utils import FrozenDict, MappingRule

from murano_engine.dsl import errors
from murano_engine.dsl.objects import MuranoObject, ObjectView, TypeRef

ITERATOR_LIMIT = 2000
MEMORY_QUOTA = 512 * 1024
# Deeper values would cost each assignment a walk as long as their depth, and
# walking them (serialising, comparing) could exhaust the C stack.
MAX_DEPTH = 500

_SCALARS = frozenset({str, int, float, bool, type(None), bytes})
# Values kept as they are: scalars and references (objects, casts, types).
_KEEP = _SCALARS | {MuranoObject, ObjectView, TypeRef}


def freeze(value: Any, limit: int = ITERATOR_LIMIT, depth: int = 0) -> Any:
    """A deep immutable copy of ``value`` (objects are kept as references)."""
    kind = type(value)
    if kind in _KEEP:
        return value
    if depth >= MAX_DEPTH:
        raise errors.ValueLimitExceededError(
            f"a value is nested more than {MAX_DEPTH} levels deep")
    depth += 1
    if kind is tuple:
        if len(value) > limit:
            raise yaql_exceptions.CollectionTooLargeException(limit)
        if _KEEP.issuperset(map(type, value)):  # the common case, checked in C
            return value
        return tuple(freeze(v, limit, depth) for v in value)
    if kind is FrozenDict or isinstance(value, Mapping):
        if len(value) > limit:
            raise yaql_exceptions.CollectionTooLargeException(limit)
        return FrozenDict({freeze(k, limit, depth): freeze(v, limit, depth)
                           for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        if len(value) > limit:
            raise yaql_exceptions.CollectionTooLargeException(limit)
        return tuple(freeze(v, limit, depth) for v in value)
    if isinstance(value, (set, frozenset)):
        if len(value) > limit:
            raise yaql_exceptions.CollectionTooLargeException(limit)
        return frozenset(freeze(v, limit, depth) for v in value)
    if isinstance(value, MappingRule):
        return value
    if isinstance(value, Iterable) and not hasattr(value, "murano_class"):
        items = []
        keep = _KEEP
        for item in value:
            if len(items) >= limit:
                raise yaql_exceptions.CollectionTooLargeException(limit)
            items.append(item if type(item) in keep else freeze(item, limit, depth))
        return tuple(items)
    return value


def thaw(value: Any) -> Any:
    """Plain mutable data (lists and dicts) for serialization and natives."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if isinstance(value, Mapping):
        return {thaw(k): thaw(v) for k, v in value.items()}
    if isinstance(value, (tuple, list, set, frozenset)):
        return [thaw(v) for v in value]
    return value
