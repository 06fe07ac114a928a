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


class _LiteralNull:
    """A ``null`` written as an argument of a method call (``$.m(null)``, ``$.m(v =>
    null)``), as the call hands it to the executor: the method gets null without its
    contract applied, as in Murano, where yaql hands such an argument over as its
    constant and the conversion returns a constant null as it is. A null reaching a
    method any other way (a variable, ``(null)``, a property, a value from outside)
    goes through the contract."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "null"


#: what a method call passes for a literal ``null`` argument; the executor binds it as
#: null and lets it go no further
LITERAL_NULL = _LiteralNull()


def literal_null(ctx: Any) -> None:
    """The compiled form of a literal ``null``: method calls know it by identity and pass
    :data:`LITERAL_NULL` for it; anywhere else it is plain null."""
    return None


def evaluated_null(ctx: Any) -> None:
    """The compiled form of ``(null)``: null that a call does not take for a literal."""
    return None


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
    _remember(_flat, value, value)


def _remember(seen: OrderedDict[int, Any], value: tuple, entry: Any) -> None:
    """Keep ``entry`` for ``value`` in ``seen`` (by id), the oldest of more than
    _FLAT_KEPT dropped."""
    seen[id(value)] = entry
    if len(seen) > _FLAT_KEPT:
        try:
            seen.popitem(last=False)  # one call: safe with threads
        except KeyError:
            pass


# Lists of records (kept values and dicts holding kept values only) frozen lately, by
# id, as ``_flat``, with the items each holds (see :func:`freeze`): the list an
# assignment froze is not walked again when the property's contract takes it, nor is
# ``$list + [record]`` made of it.
_RECORDS_MIN = 8
_records: OrderedDict[int, tuple[tuple, int]] = OrderedDict()
_RECORD_TYPES = _KEEP | {FrozenDict}


def _is_record(value: Any) -> bool:
    kind = type(value)
    return kind in _KEEP or kind is FrozenDict and len(value) <= ITERATOR_LIMIT \
        and _KEEP.issuperset(map(type, value)) and _KEEP.issuperset(map(type, value.values()))


def _record_items(value: Any) -> int:
    return 1 if type(value) in _KEEP else 1 + len(value._d)


def _remember_records(value: tuple, items: int) -> None:
    _remember(_records, value, (value, items))


def _known_records(value: tuple) -> int | None:
    """The items of ``value`` when it is a list of records frozen lately (else None)."""
    found = _records.get(id(value))
    return found[1] if found is not None and found[0] is value else None


# A FrozenDict :func:`freeze` made holds frozen values only: it carries, in this
# attribute, its shape: its height (the levels of collections it is, itself included)
# and the items it holds written out. Freezing it again where it still fits under
# MAX_DEPTH returns it as it is instead of copying it whole: a big template read with
# ``current()``, edited and stored, is not walked at every step.
_SHAPE = "_murano_shape"


def concat(left: tuple, right: tuple) -> tuple:
    """``left + right``, known flat (see :func:`freeze`) when both are, or a list of
    records when both are."""
    result = left + right
    if len(right) >= _FLAT_MIN:
        return result
    if len(result) >= _FLAT_MIN and _flat.get(id(left)) is left \
            and _KEEP.issuperset(map(type, right)):
        _remember_flat(result)
        return result
    items = _known_records(left)
    if items is not None and all(map(_is_record, right)):
        _remember_records(result, items + sum(map(_record_items, right)))
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
    """A deep immutable copy of ``value`` (objects are kept as references), nested at
    level ``depth``.

    A value holding one collection in several places is walked once, and its copy
    holds one copy of it in those places too. Its items are counted as written out
    (a list holding the same list twice counts that list's items twice), at most
    :data:`MAX_ITEMS`: so printing, serializing or comparing a value costs no more than
    that, however its parts were shared.
    """
    kind = type(value)
    if kind in _KEEP:
        return value
    if kind is FrozenDict and limit >= ITERATOR_LIMIT:
        shape = value.__dict__.get(_SHAPE)
        if shape is not None and depth + shape[0] <= MAX_DEPTH:
            return value
    elif kind is tuple and len(value) <= limit and depth < MAX_DEPTH and _is_flat(value):
        return value
    return _walk(value, limit, depth, {})[0]


#: The most items a value may hold, counted as written out (see :func:`freeze`).
MAX_ITEMS = 1_000_000


def _walk(value: Any, limit: int, depth: int, seen: dict[int, tuple]
          ) -> tuple[Any, int, int]:
    """:func:`freeze`'s walk: the copy, its height and its items; ``seen`` holds, by id,
    the collections this walk met (each with its copy, height and items)."""
    kind = type(value)
    if kind in _KEEP:
        return value, 0, 1
    if kind is FrozenDict and limit >= ITERATOR_LIMIT:
        shape = value.__dict__.get(_SHAPE)
        if shape is not None and depth + shape[0] <= MAX_DEPTH:
            return value, shape[0], shape[1]
    met = seen.get(id(value))
    if met is not None and met[0] is value:
        if depth + met[2] > MAX_DEPTH:
            raise errors.ValueLimitExceededError(
                f"a value is nested more than {MAX_DEPTH} levels deep")
        return met[1], met[2], met[3]
    if depth >= MAX_DEPTH:
        raise errors.ValueLimitExceededError(
            f"a value is nested more than {MAX_DEPTH} levels deep")
    depth += 1
    height, items = 1, 1
    if kind is tuple:
        if len(value) > limit:
            raise yaql_exceptions.CollectionTooLargeException(limit)
        if _is_flat(value):
            return value, 1, 1 + len(value)
        if limit >= ITERATOR_LIMIT and depth < MAX_DEPTH:
            known = _known_records(value)
            if known is not None:
                return value, 2, known  # frozen by an earlier call (records nest once)
        parts, height, items = _walk_items(value, limit, depth, seen)
        frozen = tuple(parts)
        if len(value) >= _RECORDS_MIN and limit == ITERATOR_LIMIT \
                and _RECORD_TYPES.issuperset(map(type, value)) \
                and all(map(operator.is_, frozen, value)):
            # every dict in it came back as it was: it holds kept values only
            _remember_records(value, items)
            frozen = value
    elif kind is FrozenDict or kind is dict or isinstance(value, Mapping):
        if len(value) > limit:
            raise yaql_exceptions.CollectionTooLargeException(limit)
        if kind is FrozenDict and _is_record(value):
            # frozen already, nothing in it to freeze (a list's records)
            return value, 1, 1 + len(value._d)
        fields: dict[Any, Any] = {}
        keep = _KEEP
        for key, item in items_of(value):
            if type(key) not in keep:
                key = _walk(key, limit, depth, seen)[0]
            if type(item) in keep:
                fields[key] = item
                items += 1
                continue
            made, below, count = _walk(item, limit, depth, seen)
            fields[key] = made
            if below >= height:
                height = below + 1
            items += count
        _check_items(items)
        frozen = _new(FrozenDict)  # its __init__ would copy the dict made here again
        made_fields = frozen.__dict__
        made_fields["_d"] = fields
        made_fields["_hash"] = None
        if limit >= ITERATOR_LIMIT:
            made_fields[_SHAPE] = (height, items)
    elif kind is list or isinstance(value, (list, tuple, set, frozenset)) \
            or isinstance(value, Iterable) and not isinstance(value, MappingRule) \
            and not hasattr(value, "murano_class"):
        sized = isinstance(value, (list, tuple, set, frozenset))
        if sized and len(value) > limit:
            raise yaql_exceptions.CollectionTooLargeException(limit)
        parts, height, items = _walk_items(value if sized else _capped(value, limit), limit,
                                           depth, seen)
        frozen = frozenset(parts) if isinstance(value, (set, frozenset)) else tuple(parts)
    else:
        return value, 0, 1  # a MappingRule, or something that is no collection
    seen[id(value)] = (value, frozen, height, items)
    return frozen, height, items


def _capped(items: Iterable, limit: int) -> Iterable:
    """The items, refused as the one past ``limit`` comes (an endless generator stops)."""
    for index, item in enumerate(items):
        if index >= limit:
            raise yaql_exceptions.CollectionTooLargeException(limit)
        yield item


def _walk_items(value: Iterable, limit: int, depth: int, seen: dict[int, tuple]
                ) -> tuple[list, int, int]:
    """:func:`_walk` of each item of a list (``depth`` its level below the list): the
    copies, the list's height and its items, the list counted."""
    parts = []
    height, items = 1, 1
    keep = _KEEP
    for item in value:
        if type(item) in keep:
            parts.append(item)
            items += 1
            continue
        made, below, count = _walk(item, limit, depth, seen)
        parts.append(made)
        if below >= height:
            height = below + 1
        items += count
    _check_items(items)
    return parts, height, items


_WALKED = frozenset({tuple, list, dict, FrozenDict, set, frozenset})


def check_built(value: Any) -> None:
    """Refuse a collection holding more than :data:`MAX_ITEMS` items written out: one an
    expression built (a list or dict literal, an operand of ``=``) or is about to print
    (a list holding one list many times prints it each time). Each part counts once per
    place it is held but is walked once; unlike :func:`freeze` it copies nothing and
    leaves what is no collection (an iterator, a lazy query) unread."""
    _built_size(value, 0, {})


def _built_size(value: Any, depth: int, seen: dict[int, tuple[Any, int]]) -> int:
    kind = type(value)
    if kind is FrozenDict:
        shape = value.__dict__.get(_SHAPE)
        if shape is not None:
            return shape[1]
    elif kind is tuple and _is_flat(value):
        return 1 + len(value)
    elif kind not in _WALKED:
        return 1
    met = seen.get(id(value))
    if met is not None and met[0] is value:
        return met[1]
    if depth >= MAX_DEPTH:
        raise errors.ValueLimitExceededError(
            f"a value is nested more than {MAX_DEPTH} levels deep")
    items = 1
    keep = _KEEP
    if kind is dict or kind is FrozenDict:
        for key, item in items_of(value):
            items += 1 if type(key) in keep else _built_size(key, depth + 1, seen)
            items += 1 if type(item) in keep else _built_size(item, depth + 1, seen)
    else:
        for item in value:
            items += 1 if type(item) in keep else _built_size(item, depth + 1, seen)
    _check_items(items)
    seen[id(value)] = (value, items)
    return items


def _check_items(items: int) -> None:
    if items > MAX_ITEMS:
        raise errors.ValueLimitExceededError(
            f"a value holds more than {MAX_ITEMS} items written out (a collection held "
            f"in several places counts in each)")


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
