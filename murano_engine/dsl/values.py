"""Frozen values: every MuranoPL value has copy semantics.

Lists become tuples and dicts become :class:`FrozenDict`, so a value handed
from one variable to another can never be changed behind the first one's back.
Collections are capped at the iterator limit, and nesting at :data:`MAX_DEPTH`,
while they are frozen.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping

from yaql.language import exceptions as yaql_exceptions
from yaql.language.utils import FrozenDict, MappingRule

from murano_engine.dsl import errors
from murano_engine.dsl.limits import ITERATOR_LIMIT
from murano_engine.dsl.objects import MuranoObject, ObjectView, TypeRef

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

# Deeper values would cost each assignment a walk as long as their depth, and
# walking them (serialising, comparing) could exhaust the C stack.
MAX_DEPTH = 500

_SCALARS = frozenset({str, int, float, bool, type(None), bytes})
# Values kept as they are: scalars and references (objects, casts, types).
_KEEP = _SCALARS | {MuranoObject, ObjectView, TypeRef}
#: the types :func:`freeze` returns as they are (callers test it to skip the call)
KEPT_TYPES = _KEEP


# Long tuples of kept values seen lately, by id (the entry keeps the tuple alive, so
# the id stays its own): a list grown item by item (``$l: $l + [$x]``) is not walked
# again at every assignment.
_FLAT_MIN = 64
_FLAT_KEPT = 64
_flat: OrderedDict[int, tuple] = OrderedDict()


def _is_flat(value: tuple) -> bool:
    """Whether the tuple holds kept values only (no collection to freeze in it)."""
    if len(value) < _FLAT_MIN:
        return _KEEP.issuperset(map(type, value))
    if _flat.get(id(value)) is value:
        return True
    if not _KEEP.issuperset(map(type, value)):
        return False
    _remember_flat(value)
    return True


def _remember_flat(value: tuple) -> None:
    _remember(_flat, value)


def _remember(seen: OrderedDict[int, tuple], value: tuple) -> None:
    seen[id(value)] = value
    if len(seen) > _FLAT_KEPT:
        try:
            seen.popitem(last=False)  # one call: safe with threads
        except KeyError:
            pass


# Lists of records (kept values and dicts holding kept values only) frozen lately, by
# id, as ``_flat``: the list an assignment froze is not walked again when the property's
# contract takes it, nor is ``$list + [record]`` made of it.
_RECORDS_MIN = 8
_records: OrderedDict[int, tuple] = OrderedDict()
_RECORD_TYPES = _KEEP | {FrozenDict}


def _is_record(value: Any) -> bool:
    kind = type(value)
    return kind in _KEEP or kind is FrozenDict and len(value) <= ITERATOR_LIMIT \
        and _KEEP.issuperset(map(type, value)) and _KEEP.issuperset(map(type, value.values()))


# A FrozenDict :func:`freeze` made holds frozen values only: it carries, in this
# attribute, the nesting level it was made at (every level below it was checked against
# MAX_DEPTH from there). Freezing it again at that level or a shallower one returns it
# as it is instead of copying it whole: a big template read with ``current()``, edited
# and stored, is not walked at every step.
_MADE_AT = "_murano_frozen_at"


def concat(left: tuple, right: tuple) -> tuple:
    """``left + right``, known flat (see :func:`freeze`) when both are, or a list of
    records when both are."""
    result = left + right
    if len(right) >= _FLAT_MIN:
        return result
    if len(result) >= _FLAT_MIN and _flat.get(id(left)) is left \
            and _KEEP.issuperset(map(type, right)):
        _remember_flat(result)
    elif _records.get(id(left)) is left and all(map(_is_record, right)):
        _remember(_records, result)
    return result


_MAPPINGS = frozenset({dict, FrozenDict})
_new = object.__new__


def is_mapping(value: Any) -> bool:
    """``isinstance(value, Mapping)``, the usual two types tested first (an ABC check
    costs a Python-level call)."""
    return type(value) in _MAPPINGS or isinstance(value, Mapping)


def items_of(mapping: Mapping) -> Any:
    """``mapping.items()``; for a FrozenDict, its dict's (the ``Mapping`` mixin's view
    walks a FrozenDict through a Python generator and ``__getitem__`` per key)."""
    if type(mapping) is FrozenDict:
        return mapping._d.items()  # yaql's FrozenDict keeps its items in ``_d``
    return mapping.items()


def plain_dict(mapping: Mapping) -> Mapping:
    """The dict a FrozenDict keeps its items in (whose ``get`` is C code, the FrozenDict's
    a Python method), else ``mapping``: for reading only."""
    return mapping._d if type(mapping) is FrozenDict else mapping


def freeze(value: Any, limit: int = ITERATOR_LIMIT, depth: int = 0) -> Any:
    """A deep immutable copy of ``value`` (objects are kept as references)."""
    kind = type(value)
    if kind in _KEEP:
        return value
    if kind is FrozenDict and limit >= ITERATOR_LIMIT:
        made_at = value.__dict__.get(_MADE_AT)
        if made_at is not None and made_at >= depth:
            return value
    if depth >= MAX_DEPTH:
        raise errors.ValueLimitExceededError(
            f"a value is nested more than {MAX_DEPTH} levels deep")
    depth += 1
    if kind is tuple:
        if len(value) > limit:
            raise yaql_exceptions.CollectionTooLargeException(limit)
        if _is_flat(value):
            return value
        if limit >= ITERATOR_LIMIT and depth < MAX_DEPTH and _records.get(id(value)) is value:
            return value  # a list of records, frozen by an earlier call (records nest once)
        keep = _KEEP
        frozen = tuple(v if type(v) in keep else freeze(v, limit, depth) for v in value)
        if len(value) >= _RECORDS_MIN and limit == ITERATOR_LIMIT \
                and _RECORD_TYPES.issuperset(map(type, value)) \
                and all(map(operator.is_, frozen, value)):
            # every dict in it came back as it was: it holds kept values only
            _remember(_records, value)
            return value
        return frozen
    if kind is FrozenDict or kind is dict or isinstance(value, Mapping):
        if len(value) > limit:
            raise yaql_exceptions.CollectionTooLargeException(limit)
        keep = _KEEP
        if kind is FrozenDict and _is_record(value):
            return value  # frozen already, nothing in it to freeze (a list's records)
        made = _new(FrozenDict)  # its __init__ would copy the dict made here again
        fields = made.__dict__
        fields["_d"] = {k if type(k) in keep else freeze(k, limit, depth):
                        v if type(v) in keep else freeze(v, limit, depth)
                        for k, v in items_of(value)}
        fields["_hash"] = None
        if limit >= ITERATOR_LIMIT:
            fields[_MADE_AT] = depth - 1
        return made
    if kind is list or isinstance(value, (list, tuple)):
        if len(value) > limit:
            raise yaql_exceptions.CollectionTooLargeException(limit)
        keep = _KEEP
        return tuple(v if type(v) in keep else freeze(v, limit, depth) for v in value)
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
        return {thaw(k): thaw(v) for k, v in items_of(value)}
    if isinstance(value, (tuple, list, set, frozenset)):
        return [thaw(v) for v in value]
    return value
