"""yaql's collection functions for frozen values, without overload resolution.

yaql picks an overload at every call, which costs tens of microseconds, and
``sum()`` even resolves ``+`` once per element. For the values MuranoPL holds
(tuples, frozen dicts, sets and lazy query results) the choice is always the
same function, so what that function does is done here directly, with yaql's
limits: a collection argument longer than the iterator limit raises
``CollectionTooLargeException`` and an operand or result over the memory quota
``MemoryQuotaExceededException``, as yaql's do. Each function returns
:data:`NOT_HANDLED` for the cases it leaves to yaql; tests/dsl/test_compiler.py
compares every one with yaql's own result.
"""

from __future__ import annotations

import functools
import itertools
import operator
import sys
from collections.abc import Callable, Iterator, Mapping, MappingView, Sequence, Set

from yaql.language import exceptions as yaql_exceptions
from yaql.language import utils as yaql_utils
from yaql.language.utils import FrozenDict, MappingRule

from murano_engine.dsl.budget import LongRange, check_replacement
from murano_engine.dsl.contexts import DslContext, frame_of
from murano_engine.dsl.limits import ITERATOR_LIMIT, MEMORY_QUOTA
from murano_engine.dsl.values import check_built, concat

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

NOT_HANDLED = object()
#: the collection turned out empty: yaql's own method, called on ``()``, gives the outcome
EMPTY = object()
NO_VALUE = yaql_utils.NO_VALUE

_NUMBERS = frozenset({int, float})
_DICTS = frozenset({FrozenDict, dict})
_SEQUENCES = frozenset({tuple, list})
_COLLECTIONS = frozenset({tuple, list, frozenset, set})
_getsizeof = sys.getsizeof
_YAQL_QUERIES = "yaql.standard_library.queries"


def is_collection(value: Any) -> bool:
    """Whether yaql's ``Iterable()`` parameter takes ``value`` (not text, not a dict): lists,
    sets, lazy query results, a dict's ``keys()`` / ``values()`` and ``orderBy()``'s."""
    if type(value) in _COLLECTIONS:
        return True
    if isinstance(value, (str, Mapping)):
        return False
    if isinstance(value, (Iterator, MappingView)):
        return True
    if type(value) is Ordering:
        return True
    # yaql's own OrderingIterable (its orderBy() where the fast path below declines): none
    # exists before yaql's query library is imported
    ordering = sys.modules.get(_YAQL_QUERIES)
    return ordering is not None and isinstance(value, ordering.OrderingIterable)


def limited(collection: Any) -> Any:
    """``collection`` capped at the iterator limit, as yaql's ``Iterable()`` converts it."""
    if type(collection) in _COLLECTIONS or isinstance(collection, (Sequence, Mapping, Set)):
        if len(collection) > ITERATOR_LIMIT:
            raise yaql_exceptions.CollectionTooLargeException(ITERATOR_LIMIT)
        return collection
    return _limiting(collection)


def _limiting(iterator: Any) -> Iterator[Any]:
    for index, item in enumerate(iterator):
        if index >= ITERATOR_LIMIT:
            raise yaql_exceptions.CollectionTooLargeException(ITERATOR_LIMIT)
        yield item


def _check_quota(*items: Any) -> None:
    total = 0
    for item in items:
        total += _getsizeof(item, 0)
        if total > MEMORY_QUOTA:
            raise yaql_exceptions.MemoryQuotaExceededException()


class Rule:
    """A compiled ``source => destination`` argument: called, both sides evaluated (yaql's
    MappingRule, as ``dict()`` takes it); ``switch()`` evaluates them one at a time."""

    __slots__ = ("source", "destination")

    def __init__(self, source: Evaluator, destination: Evaluator) -> None:
        self.source = source
        self.destination = destination

    def __call__(self, ctx: Any) -> MappingRule:
        return MappingRule(self.source(ctx), self.destination(ctx))


# -- operators -------------------------------------------------------------------

def plus(a: Any, b: Any) -> Any:
    """``a + b`` for numbers, lists, sets and dicts (yaql's ``#operator_+`` overloads)."""
    ta = type(a)
    tb = type(b)
    if ta in _NUMBERS and tb in _NUMBERS:
        return a + b
    if ta is tuple and tb is tuple:
        if len(a) > ITERATOR_LIMIT or len(b) > ITERATOR_LIMIT:
            raise yaql_exceptions.CollectionTooLargeException(ITERATOR_LIMIT)
        _check_quota(a, b)
        result = concat(a, b)
    elif ta in _DICTS and tb in _DICTS:  # (toDict() gives a plain dict, as yaql's)
        _check_quota(a, b)
        merged = dict(a)
        merged.update(b)
        result = FrozenDict(merged)
    elif ta is frozenset and tb is frozenset:
        if len(a) > ITERATOR_LIMIT or len(b) > ITERATOR_LIMIT:
            raise yaql_exceptions.CollectionTooLargeException(ITERATOR_LIMIT)
        _check_quota(a, b)
        result = a.union(b)
    else:
        return NOT_HANDLED
    _check_quota(result)
    return result


def contains(item: Any, collection: Any) -> Any:
    """``item in collection`` for lists and sets (yaql's ``#operator_in``)."""
    if type(collection) in _COLLECTIONS:
        if len(collection) > ITERATOR_LIMIT:
            raise yaql_exceptions.CollectionTooLargeException(ITERATOR_LIMIT)
        check_built(item)  # compared with each item, in C code (see compiler)
        return item in collection
    return NOT_HANDLED


def length(value: Any) -> Any:
    """``len(value)`` / ``value.len()`` for text, lists, dicts, sets (a dict's ``keys()``
    too; yaql has no length of its ``values()``) and query results."""
    kind = type(value)
    if kind in _COLLECTIONS or kind is FrozenDict or kind is str or isinstance(value, Set) \
            or kind is LongRange:
        return len(value)
    if isinstance(value, Iterator) and not isinstance(value, (str, Mapping)):
        count = 0
        for _ in value:
            count += 1
        return count
    return NOT_HANDLED


# -- methods ---------------------------------------------------------------------

if TYPE_CHECKING:
    Evaluator = Callable[[Any], Any]
    Method = Callable[[Any, Any, list, dict], Any]


def _lambda(ctx: Any, body: Evaluator) -> Callable[[Any], Any]:
    """``body`` as yaql's ``Lambda()`` parameter calls it: ``$`` bound in a child context,
    one budget step a call."""
    budget = frame_of(ctx).executor.budget

    def call(item: Any) -> Any:
        budget.left -= 1
        if budget.left < 0:
            budget.checkpoint()
        child = _child(ctx)
        child._data["$1"] = item
        return body(child)

    return call


def _child(ctx: Any) -> Any:
    return DslContext(ctx) if type(ctx) is DslContext else ctx.create_child_context()


def select(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    if len(args) != 1 or kwargs or not is_collection(receiver):
        return NOT_HANDLED
    return map(_lambda(ctx, args[0]), limited(receiver))


def where(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    if len(args) != 1 or kwargs or not is_collection(receiver):
        return NOT_HANDLED
    return filter(_lambda(ctx, args[0]), limited(receiver))


def len_method(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    if args or kwargs:
        return NOT_HANDLED
    return length(receiver)


def count(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    if args or kwargs or not is_collection(receiver):
        return NOT_HANDLED
    items = limited(receiver)
    if type(items) in _COLLECTIONS:
        return len(items)
    total = 0
    for _ in items:
        total += 1
    return total


def first(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    """``collection.first()`` and ``collection.first(default)`` (the default evaluated
    first, as yaql evaluates a call's arguments before it runs)."""
    if len(args) > 1 or kwargs or not is_collection(receiver):
        return NOT_HANDLED
    default = args[0](ctx) if args else NO_VALUE
    items = limited(receiver)
    if type(items) in _SEQUENCES:
        if items:
            return items[0]
    else:
        for item in items:
            return item
    return EMPTY if default is NO_VALUE else default


def last(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    if args or kwargs or not is_collection(receiver):
        return NOT_HANDLED
    items = limited(receiver)
    if type(items) in _SEQUENCES:
        return items[-1] if items else NOT_HANDLED
    if isinstance(items, Set):
        return NOT_HANDLED
    found = NO_VALUE
    for item in items:
        found = item
    return EMPTY if found is NO_VALUE else found


def sum_method(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    """``collection.sum()`` and ``collection.sum(initial)``: yaql folds with ``+``; numbers
    add directly, other pairs take yaql's ``+`` (resolved for those operands, as yaql's
    delegate does)."""
    initial = kwargs.get("initial", args[0] if len(args) == 1 else None)
    if len(args) + len(kwargs) > 1 or (kwargs and initial is None) \
            or not is_collection(receiver):
        return NOT_HANDLED
    items = iter(limited(receiver))
    if initial is not None:
        total = initial(ctx)
    else:
        total = NO_VALUE
        for item in items:
            total = item
            break
        if total is NO_VALUE:
            return EMPTY
    engine = frame_of(ctx).executor.runtime.engine
    numbers = _NUMBERS
    for item in items:
        if type(total) in numbers and type(item) in numbers:
            total = total + item
            continue
        added = plus(total, item)
        if added is NOT_HANDLED:
            added = _child(ctx)("#operator_+", engine, NO_VALUE, use_convention=True)(
                total, item)
        total = added
    return total


def _comparison(ctx: Any, name: str, compare: Callable[[Any, Any], bool],
                ) -> Callable[[Any, Any], Any]:
    """yaql's ``#operator_<`` / ``#operator_>`` as ``orderBy()`` injects them: numbers with
    numbers and text with text directly, other pairs by yaql's overloads."""
    engine = frame_of(ctx).executor.runtime.engine
    numbers = _NUMBERS

    def apply(a: Any, b: Any) -> Any:
        ta = type(a)
        tb = type(b)
        if (ta in numbers and tb in numbers) or (ta is str and tb is str):
            return compare(a, b)
        return _child(ctx)(name, engine, NO_VALUE, use_convention=True)(a, b)

    return apply


class Ordering(yaql_utils.IterableType):
    """``orderBy()``'s result, as yaql's ``OrderingIterable`` is: ``thenBy()`` adds a key,
    the collection is sorted (stably) when first iterated, each key's selector run per
    comparison. Its own class, so that ordering does not import yaql's query library
    (with ``inspect``, ``ast`` and ``tokenize``: about 48M instructions, a third of a
    run's start-up)."""

    def __init__(self, collection: Any, less: Callable[[Any, Any], Any],
                 greater: Callable[[Any, Any], Any]) -> None:
        self.collection = collection
        self._less = less
        self._greater = greater
        self._keys: list[tuple[Callable[[Any], Any], bool]] = []
        self._sorted: list | None = None

    def add_key(self, selector: Callable[[Any], Any], ascending: bool) -> None:
        self._keys.append((selector, ascending))

    def __iter__(self) -> Iterator[Any]:
        if self._sorted is None:
            self._sorted = sorted(self.collection, key=functools.cmp_to_key(self._compare))
        return iter(self._sorted)

    def _compare(self, left: Any, right: Any) -> int:
        for selector, ascending in self._keys:
            a, b = selector(left), selector(right)
            if self._less(a, b):
                order = -1
            elif self._greater(a, b):
                order = 1
            else:
                continue
            return order if ascending else -order
        return 0


def _ordering(ascending: bool) -> Method:
    def order(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
        if len(args) != 1 or kwargs or not is_collection(receiver):
            return NOT_HANDLED
        ordered = Ordering(limited(receiver), _comparison(ctx, "#operator_<", operator.lt),
                           _comparison(ctx, "#operator_>", operator.gt))
        ordered.add_key(_lambda(ctx, args[0]), ascending)
        return ordered
    return order


def _then(ascending: bool) -> Method:
    def then(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
        if len(args) != 1 or kwargs or type(receiver) is not Ordering:
            return NOT_HANDLED
        receiver.add_key(_lambda(ctx, args[0]), ascending)
        return receiver
    return then


def dict_get(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    """``dict.get(key)`` and ``dict.get(key, default)``."""
    if type(receiver) is not FrozenDict or kwargs or not 1 <= len(args) <= 2:
        return NOT_HANDLED
    key = args[0](ctx)
    default = args[1](ctx) if len(args) == 2 else None
    result = receiver._d.get(key, default)  # its dict's get: FrozenDict's is Python code
    _check_quota(result)
    return result


def _dict_view(view: Callable[[FrozenDict], Any]) -> Method:
    """``dict.keys()``, ``dict.values()`` and ``dict.items()``: ``view`` of the dict."""
    def method(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
        if type(receiver) is not FrozenDict or args or kwargs:
            return NOT_HANDLED
        return view(receiver)
    return method


def replace_text(ctx: Any, receiver: Any, given: list) -> Any:
    """``text.replace(old, new[, count])`` and ``text.replace({old => new, ...}[, count])``
    of evaluated arguments, keys and values written as yaql's ``str()`` writes them;
    other arguments go to yaql's overloads (``library/regexes.py`` takes patterns)."""
    kinds = tuple(map(type, given))
    if type(receiver) is str:
        if kinds in ((str, str), (str, str, int)):
            return _replaced(receiver, *given)
        if kinds and kinds[0] is FrozenDict and kinds[1:] in ((), (int,)):
            count = given[1] if len(given) == 2 else -1
            for key, value in given[0]._d.items():
                receiver = _replaced(receiver, _text(ctx, key), _text(ctx, value), count)
            return receiver
    return _yaql_method(ctx, "replace", receiver, given)


def _replaced(text: str, old: str, new: str, count: int = -1) -> str:
    """``text.replace(old, new, count)``, refused before it is made when it would pass
    the memory quota (four chained replaces of 57 characters made 600 MB)."""
    if len(new) > len(old):  # (a text that does not grow is no bigger than it was)
        check_replacement(text, old, new, count)
    return text.replace(old, new, count)


def _text(ctx: Any, value: Any) -> str:
    """yaql's ``str(value)``."""
    text = text_of(ctx, [value])
    return ctx("str", _engine(ctx), NO_VALUE, ctx)(value) if text is NOT_HANDLED else text


def _engine(ctx: Any) -> Any:
    return frame_of(ctx).executor.runtime.engine


def join(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    """``texts.join(separator)`` and ``separator.join(texts)``, refused before the text is
    made when it would pass the memory quota (a join of 2,000 texts of 256 KiB made
    half a gigabyte, then refused it); other arguments go to yaql's overloads."""
    if len(args) != 1 or kwargs or not (type(receiver) is str or is_collection(receiver)):
        return NOT_HANDLED
    receiver = _read_once(receiver)
    given = _read_once(args[0](ctx))
    texts, separator = (given, receiver) if type(receiver) is str else (receiver, given)
    if type(separator) is str and type(texts) is tuple and \
            all(type(text) is str for text in texts):
        size = sum(map(len, texts)) + len(separator) * max(len(texts) - 1, 0)
        if size > MEMORY_QUOTA:
            raise yaql_exceptions.MemoryQuotaExceededException()
        return separator.join(texts)
    return _yaql_method(ctx, "join", receiver, [given])


def _read_once(value: Any) -> Any:
    """A collection as a tuple (an iterator is read here, once), anything else as it is."""
    return value if type(value) is str or not is_collection(value) else tuple(limited(value))


def _text_method(convert: Callable[[str], str]) -> Method:
    """``text.toLower()`` / ``text.toUpper()``."""
    def method(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
        if type(receiver) is not str or args or kwargs:
            return NOT_HANDLED
        return convert(receiver)
    return method


# -- building lists, sets and dicts ---------------------------------------------------

def _modern(ctx: Any) -> bool:
    """Whether ``ctx`` evaluates with yaql's standard library, not its legacy flavour
    (Formats 1.0 and 1.1), whose ``toList()`` gives Python lists and whose ``=>`` and
    ``dict()`` take tuples."""
    frame = frame_of(ctx)
    return frame is not None and not frame.murano_class.package.legacy


def _unpacked(items: Any) -> Iterator[Any]:
    """The items, an iterator among them read out in its place (nested ones too), as
    ``list()`` and ``set()`` take their arguments."""
    for item in items:
        if isinstance(item, Iterator):
            yield from _unpacked(item)
        else:
            yield item


def _items_of(ctx: Any, args: list) -> Any:
    """``list()``'s and ``set()``'s arguments, iterators among them read out, or
    NOT_HANDLED."""
    if not _modern(ctx):
        return NOT_HANDLED
    _refuse_rules(args)
    if any(isinstance(arg, Iterator) for arg in args):
        return _unpacked(args)
    return tuple(args)


def _refuse_rules(given: list) -> None:
    """A ``'key' => value`` argument of a function that takes none, refused as yaql
    refuses it (here after the arguments are evaluated: yaql refuses it before)."""
    if any(type(value) is MappingRule for value in given):
        raise yaql_exceptions.MappingTranslationException()


def list_of(ctx: Any, args: list) -> Any:
    """``list(a, b, ...)``: the arguments as a list, iterators among them read out."""
    items = _items_of(ctx, args)
    return items if items is NOT_HANDLED else _as_list(items)


def set_of(ctx: Any, args: list) -> Any:
    """``set(a, b, ...)``: the arguments as a set, iterators among them read out."""
    items = _items_of(ctx, args)
    if items is NOT_HANDLED:
        return items
    result = frozenset(limited(items))
    _check_quota(result)
    return result


def dict_of(ctx: Any, args: list) -> Any:
    """``dict('a' => 1, $k => 2)`` (rules with computed keys) and ``dict(pairs)``; keys
    written as names take :func:`dict_of_keywords` before these are evaluated."""
    if not args or not _modern(ctx):
        return NOT_HANDLED
    if all(type(arg) is MappingRule for arg in args):
        result = FrozenDict((rule.source, rule.destination) for rule in args)
        _check_quota(result)
        return result
    if len(args) != 1 or not is_collection(args[0]):
        return NOT_HANDLED
    made: dict[Any, Any] = {}
    try:
        for pair in limited(args[0]):
            parts = iter(pair)
            key = next(parts)
            made[key] = next(parts)
            _check_quota(made)
    except StopIteration as exc:  # a pair of fewer than two: yaql's runner wraps it so
        raise yaql_exceptions.WrappedException(exc) from exc
    return FrozenDict(made)


def _as_list(items: Any) -> tuple:
    """yaql's ``toList()`` of a collection (as ``list()`` and ``mergeWith()`` call it)."""
    items = limited(items)
    result = items if type(items) is tuple else tuple(items)
    _check_quota(result)
    return result


def _yaql_method(ctx: Any, name: str, receiver: Any, given: list) -> Any:
    """``receiver.name(*given)`` by yaql's overloads, of arguments already evaluated."""
    return ctx(name, _engine(ctx), receiver, ctx)(*given)


def to_list(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    if args or kwargs or not is_collection(receiver) or not _modern(ctx):
        return NOT_HANDLED
    return _as_list(receiver)


def append(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    """``collection.append(a, ...)``: the collection's items then the arguments, read
    as they are used, as yaql's."""
    if kwargs or not is_collection(receiver):
        return NOT_HANDLED
    given = [arg(ctx) for arg in args]
    _refuse_rules(given)
    return itertools.chain(limited(receiver), given)


def contains_item(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    """``collection.contains(value)``."""
    if len(args) != 1 or kwargs or not is_collection(receiver):
        return NOT_HANDLED
    items = limited(receiver)
    return args[0](ctx) in items


def contains_key(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    """``dict.containsKey(key)``."""
    if len(args) != 1 or kwargs or type(receiver) is not FrozenDict:
        return NOT_HANDLED
    return args[0](ctx) in receiver._d


def select_many(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    """``collection.selectMany(selector)``: each item's selected collection read out in
    its place (a selected value that is not a collection, as it is), read as used."""
    if len(args) != 1 or kwargs or not is_collection(receiver):
        return NOT_HANDLED
    return _selected_many(_lambda(ctx, args[0]), limited(receiver))


def _selected_many(selector: Callable[[Any], Any], items: Any) -> Iterator[Any]:
    for item in items:
        inner = selector(item)
        if yaql_utils.is_iterable(inner):
            yield from inner
        else:
            yield inner


def concat_collections(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    """``collection.concat(another, ...)``: the collections one after the other, read as
    used; other arguments go to yaql's overloads."""
    if kwargs or not is_collection(receiver):
        return NOT_HANDLED
    given = [arg(ctx) for arg in args]
    if not all(is_collection(value) for value in given):
        return _yaql_method(ctx, "concat", receiver, given)
    return itertools.chain(limited(receiver), *map(limited, given))


def _sliced(start: bool) -> Method:
    """``collection.skip(count)`` (``start``) and ``collection.take(count)``."""
    def method(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
        if len(args) != 1 or kwargs or not is_collection(receiver):
            return NOT_HANDLED
        count = args[0](ctx)
        if type(count) is not int:
            return _yaql_method(ctx, "skip" if start else "take", receiver, [count])
        items = limited(receiver)
        return itertools.islice(items, count, None) if start else itertools.islice(items, count)
    return method


def to_dict(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    """``collection.toDict(keySelector)`` and ``toDict(keySelector, valueSelector)``: a
    plain dict, as yaql's."""
    if not 1 <= len(args) <= 2 or kwargs or not is_collection(receiver):
        return NOT_HANDLED
    key_of = _lambda(ctx, args[0])
    value_of = _lambda(ctx, args[1]) if len(args) == 2 else None
    made: dict[Any, Any] = {}
    for item in limited(receiver):
        key = key_of(item)
        made[key] = item if value_of is None else value_of(item)
        _check_quota(made)
    return made


def distinct(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    """``collection.distinct()``: each item once, in order, read as they are used."""
    if args or kwargs or not is_collection(receiver):
        return NOT_HANDLED
    return _distinct(limited(receiver))


def _distinct(items: Any) -> Iterator[Any]:
    seen: set[Any] = set()
    for item in items:
        if item not in seen:
            seen.add(item)
            _check_quota(seen)
            yield item


def dict_set(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    """``dict.set(key, value)``, ``dict.set(replacements)`` and ``dict.set(k => v, ...)``."""
    if type(receiver) is not FrozenDict or not _modern(ctx):
        return NOT_HANDLED
    if kwargs:  # keys written as names: rules too, after any positional ones
        if args:
            return NOT_HANDLED
        given = [MappingRule(key, value(ctx)) for key, value in kwargs.items()]
    elif args:
        given = [arg(ctx) for arg in args]
    else:
        return NOT_HANDLED
    rules = [type(value) is MappingRule for value in given]
    if all(rules):
        _check_quota(receiver, *given)
        pairs: Any = ((rule.source, rule.destination) for rule in given)
    elif len(given) == 2 and not any(rules):
        _check_quota(receiver, *given)
        pairs = (given,)
    elif len(given) == 1 and isinstance(given[0], Mapping):
        _check_quota(receiver, given[0])
        pairs = given[0].items()
    else:
        return _yaql_method(ctx, "set", receiver, given)
    result = FrozenDict(itertools.chain(receiver._d.items(), pairs))
    _check_quota(result)
    return result


def merge_with(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    """``dict.mergeWith(another)``: yaql's deep merge, as a plain dict (as yaql's)."""
    if len(args) != 1 or kwargs or not isinstance(receiver, Mapping) or not _modern(ctx):
        return NOT_HANDLED
    another = args[0](ctx)
    if not isinstance(another, Mapping):
        return _yaql_method(ctx, "mergeWith", receiver, [another])
    result = _merged(receiver, another)
    _check_quota(result)
    return result


def _merged(first: Mapping, second: Mapping) -> dict:
    """``first`` and ``second`` merged: ``first``'s keys in its order, then those only
    ``second`` has; where both have a key, dicts are merged again, lists joined without
    repeats (``toList(distinct(a + b))``), anything else is ``second``'s."""
    result = {}
    for key, mine in first.items():
        if key not in second:
            result[key] = mine
            continue
        theirs = second[key]
        if isinstance(theirs, Mapping):
            if not isinstance(mine, Mapping):
                raise TypeError(f"Cannot merge {type(mine)} with {type(theirs)}")
            result[key] = _merged(mine, theirs)
        elif isinstance(theirs, Sequence) and type(theirs) is not str:
            if not isinstance(mine, Sequence) or type(mine) is str:
                raise TypeError(f"Cannot merge {type(mine)} with {type(theirs)}")
            result[key] = _as_list(_distinct(mine + theirs))
        else:
            result[key] = theirs
    for key, theirs in second.items():
        if key not in result:
            result[key] = theirs
    return result


#: method name -> fast path ``(ctx, receiver, args, kwargs)``, the arguments as evaluators;
#: it returns the result, NOT_HANDLED or EMPTY
METHODS: dict[str, Method] = {
    "select": select,
    "where": where,
    "len": len_method,
    "count": count,
    "first": first,
    "last": last,
    "sum": sum_method,
    "orderBy": _ordering(True),
    "orderByDescending": _ordering(False),
    "thenBy": _then(True),
    "thenByDescending": _then(False),
    "get": dict_get,
    "keys": _dict_view(operator.methodcaller("keys")),
    "values": _dict_view(operator.methodcaller("values")),
    "join": join,
    "toLower": _text_method(str.lower),
    "toUpper": _text_method(str.upper),
    "toList": to_list,
    "items": _dict_view(operator.methodcaller("items")),
    "append": append,
    "distinct": distinct,
    "contains": contains_item,
    "containsKey": contains_key,
    "selectMany": select_many,
    "concat": concat_collections,
    "skip": _sliced(True),
    "take": _sliced(False),
    "toDict": to_dict,
    "set": dict_set,
    "mergeWith": merge_with,
}


# -- functions -------------------------------------------------------------------

_SCALARS = frozenset({str, int, float, bool, type(None)})


def text_of(ctx: Any, args: list) -> Any:
    """``str(value)`` of a scalar: yaql's ``null``, ``true`` and ``false``, else Python's.
    A collection goes to yaql's once it is known to be no bigger written out than a value
    may be (:func:`~murano_engine.dsl.values.check_built`)."""
    if len(args) != 1 or type(args[0]) not in _SCALARS:
        if len(args) == 1:
            check_built(args[0])
        return NOT_HANDLED
    value = args[0]
    _check_quota(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def concat_text(ctx: Any, args: list) -> Any:
    """``concat(text, ...)`` of strings (yaql's other ``concat`` joins collections)."""
    if not args or any(type(arg) is not str for arg in args):
        return NOT_HANDLED
    _check_quota(*args)
    result = "".join(args)
    _check_quota(result)
    return result


def _step(ctx: Any) -> None:
    """One budget step, as yaql's call of a compiled argument counts one."""
    budget = frame_of(ctx).executor.budget
    budget.left -= 1
    if budget.left < 0:
        budget.checkpoint()


def coalesce(ctx: Any, args: list, kwargs: dict) -> Any:
    """``coalesce(a, b, ...)``: the first argument that is not null, the arguments
    evaluated in order up to it (yaql's takes them as lambdas)."""
    if kwargs:
        return NOT_HANDLED
    for arg in args:
        _step(ctx)
        value = arg(ctx)
        if value is not None:
            return value
    return None


def switch(ctx: Any, args: list, kwargs: dict) -> Any:
    """``switch(condition => value, ...)``: the value of the first rule whose condition
    holds (null when none does), conditions evaluated in order up to it."""
    if kwargs or not args or not all(type(arg) is Rule for arg in args):
        return NOT_HANDLED
    for rule in args:
        _step(ctx)
        if rule.source(ctx):
            _step(ctx)
            return rule.destination(ctx)
    return None


def absolute(ctx: Any, args: list) -> Any:
    """``abs(number)``."""
    if len(args) != 1 or type(args[0]) not in _NUMBERS:
        return NOT_HANDLED
    return abs(args[0])


def dict_of_keywords(ctx: Any, args: list, kwargs: dict) -> Any:
    """``dict(a => 1, b => 2)``: keys written as names, values in the order written
    (yaql's other forms, ``dict('a' => 1)`` and ``dict(pairs)``, stay yaql's). yaql
    measures the rules against the memory quota, a few dozen bytes each: nothing a
    call can exceed."""
    if args:
        return NOT_HANDLED
    made = {}
    for key, value in kwargs.items():
        _step(ctx)
        made[key] = value(ctx)
    return FrozenDict(made)


if TYPE_CHECKING:
    Function = Callable[[Any, list], Any]
    LazyFunction = Callable[[Any, list, dict], Any]

#: function name -> fast path ``(ctx, args)`` taking the evaluated positional arguments;
#: it returns the result or NOT_HANDLED (yaql then gets the same values)
FUNCTIONS: dict[str, Function] = {
    "str": text_of,
    "concat": concat_text,
    "list": list_of,
    "set": set_of,
    "dict": dict_of,
    "abs": absolute,
}

#: function name -> fast path ``(ctx, args, kwargs)`` taking the arguments as
#: evaluators; it returns the result, or NOT_HANDLED before evaluating any of them
LAZY_FUNCTIONS: dict[str, LazyFunction] = {
    "coalesce": coalesce,
    "dict": dict_of_keywords,
    "switch": switch,
}
