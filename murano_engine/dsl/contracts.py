"""Contracts: the declarations that check and transform property and argument values.

A contract is a yaql expression (``$.string().notNull()``), a list
(``[$.int(), 1, 3]``), a dict (``{key: $.string()}``) or a constant. Applying
one returns the transformed value (coerced scalars, objects made from dicts)
or raises :class:`ContractViolationException` naming the value's path.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping

from yaql.language import exceptions as yaql_exceptions
from yaql.language.utils import FrozenDict

from murano_engine.dsl import errors
from murano_engine.dsl.contexts import DslContext
from murano_engine.dsl.errors import Position
from murano_engine.dsl.expressions import Expression
from murano_engine.dsl.limits import ITERATOR_LIMIT
from murano_engine.dsl.objects import MuranoObject, ObjectView, TypeRef

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

_SCALARS = (str, int, float, bool, type(None))
_SCALAR_TYPES = frozenset(_SCALARS)
#: records a dict contract remembers as passed (see _dict_contract)
_PASSED_KEPT = 512
_new_scope = object.__new__


class ContractScope:
    """Where a contract is applied: who owns the value and how to name it.

    The name (``path``) is put together only when an error needs it: a list
    contract makes a scope per item.
    """

    __slots__ = ("frame", "this", "owner", "_path", "_parent", "_key", "dry_run", "checking")

    def __init__(self, frame: Any, this: Any, owner: MuranoObject | None, path: str,
                 dry_run: bool = False, checking: bool = False) -> None:
        self.frame = frame
        self.this = this
        self.owner = owner
        self._path: str | None = path
        self._parent: ContractScope | None = None
        self._key: Any = None
        self.dry_run = dry_run
        #: checking a value another declaration already made (overridden property)
        self.checking = checking

    @property
    def path(self) -> str:
        if self._path is None:
            assert self._parent is not None
            self._path = f"{self._parent.path}[{self._key}]"
        return self._path

    def at(self, key: Any) -> ContractScope:
        """The scope of the item ``key`` (a list index or a dict key) of this value."""
        scope = _new_scope(ContractScope)  # one per item: no __init__ to run
        scope.frame = self.frame
        scope.this = self.this
        scope.owner = self.owner
        scope._path = None
        scope._parent = self
        scope._key = key
        scope.dry_run = self.dry_run
        scope.checking = self.checking
        return scope

    def get_data(self, key: str) -> ContractScope:
        """As the context of a simple contract chain (``$.string().notNull()``), whose
        functions ask it for nothing but the scope (``$?contract``)."""
        return self

    def violation(self, message: str) -> errors.DslError:
        return errors.ContractViolationException(f"[{self.path}] {message}")


class Contract:
    """A compiled contract.

    ``kept`` holds the types whose values the contract returns as they are
    without looking further (``int`` for ``$.int().notNull()``): callers skip
    applying it, and making its scope, for those. ``makes_objects`` says the
    contract returns objects (or null) only, made of what it is given
    (``$.class(T)``, a list of those): callers hand it model data as it is, unfrozen,
    since none of it is kept. ``quick``, when there is one, tells without a scope
    whether the contract returns a (frozen) value as it is (``$.int().check($ >= 0)``
    for 8080, ``[$.string()]`` for a tuple of text): True spares applying it.
    """

    __slots__ = ("spec", "position", "_apply", "kept", "makes_objects", "quick")

    def __init__(self, spec: Any, position: Position | None) -> None:
        self.spec = spec
        self.position = position
        self._apply = _compile(spec, position)
        self.kept = _kept_types(spec)
        self.makes_objects = _makes_objects(spec)
        self.quick = _quick_check(spec)

    def apply(self, value: Any, scope: ContractScope) -> Any:
        return self._apply(value, scope)


def _compile(spec: Any, position: Position | None) -> Any:
    if isinstance(spec, Expression):
        return _expression_contract(spec)
    if isinstance(spec, list):
        return _list_contract(spec, position)
    if isinstance(spec, dict):
        return _dict_contract(spec, position)
    if isinstance(spec, _SCALARS):
        return _constant_contract(spec)
    raise errors.DslContractSyntaxError(f"invalid contract {spec!r}", position)


def _expression_contract(expr: Expression) -> Any:
    chain = _simple_chain(expr.node)
    if chain is not None:
        return _chain_contract(chain)
    checked = _checked_chain(expr.node)
    if checked is not None:
        return _checked_chain_contract(*checked, expr)
    class_check = _class_check(expr.node)
    if class_check is not None:
        return _class_contract(*class_check, expr)
    return _evaluated_contract(expr)


def _evaluated_contract(expr: Expression) -> Any:
    """The contract evaluated as yaql in a context of its own."""

    def apply(value: Any, scope: ContractScope) -> Any:
        try:
            return expr.evaluate_contract(_contract_context(value, scope))
        except yaql_exceptions.YaqlException as exc:
            if errors.stack_of(exc):  # raised by a method the contract ran: keep it
                raise
            raise _not_evaluated(expr, exc) from None
    return apply


def _contract_context(value: Any, scope: ContractScope) -> DslContext:
    """The context a contract evaluates in: ``$`` the value, ``$this`` the owner."""
    ctx = DslContext(scope.frame.context, scope.frame)
    data = ctx._data
    data["$1"] = value
    data["$this"] = scope.this
    data["$?contract"] = scope
    return ctx


def _not_evaluated(expr: Expression, exc: Exception) -> errors.DslError:
    """A contract that cannot be evaluated (``$.str*ng()``): the class's fault."""
    return errors.ContractViolationException(
        f"{expr.position}: contract {expr.source!r} cannot be evaluated: {exc}")


def _checked_chain(node: Any) -> tuple[list[str], Any] | None:
    """``$.int().check(P)`` -> (["int"], P): a simple chain, then ``check`` with one
    predicate and no message; None for anything else."""
    from yaql.language import expressions as ast
    if isinstance(node, ast.Statement):
        node = node.expression
    if not (isinstance(node, ast.BinaryOperator) and node.operator == "."):
        return None
    target, call = node.args
    if type(call) is not ast.Function or call.name != "check" or len(call.args) != 1 \
            or isinstance(call.args[0], ast.MappingRuleExpression):
        return None
    names = _simple_chain(target)
    if names is None:
        return None
    return names, call.args[0]


def _checked_chain_contract(names: list[str], predicate_node: Any, expr: Expression) -> Any:
    """``$.int().check($ >= 0)`` without yaql's call machinery: the chain's functions,
    then the predicate evaluated with ``$`` the chain's result."""
    chain = _chain_contract(names) if names else None
    predicate = Expression(str(predicate_node), expr.position, predicate_node)

    def apply(value: Any, scope: ContractScope) -> Any:
        if chain is not None:
            value = chain(value, scope)
        try:
            matched = predicate.evaluate(_contract_context(value, scope))
        except yaql_exceptions.YaqlException as exc:
            if errors.stack_of(exc):
                raise
            raise _not_evaluated(expr, exc) from None
        if not matched:
            raise scope.violation(f"value {value!r} doesn't match predicate")
        return value
    return apply


_ARGUMENTLESS = ("string", "int", "bool", "notNull", "owned", "notOwned")
_NONE = type(None)
#: per function of a simple chain, the types of value it returns as they are
_KEEPS: dict[str, frozenset[type]] = {
    "string": frozenset({str, _NONE}),
    "int": frozenset({int, _NONE}),
    "bool": frozenset({bool, _NONE}),
    "notNull": frozenset({str, int, float, bool, tuple, frozenset, FrozenDict, MuranoObject,
                          ObjectView, TypeRef}),
    "owned": frozenset({str, int, float, bool, _NONE}),
    "notOwned": frozenset({str, int, float, bool, _NONE}),
}


def _chain_kept(names: list[str]) -> frozenset[type]:
    """The types every function of the chain ``names`` returns as they are (none for
    ``$`` alone: it has no function to skip)."""
    if not names:
        return frozenset()
    kept = _KEEPS[names[0]]
    for name in names[1:]:
        kept &= _KEEPS[name]
    return kept


def _kept_types(spec: Any) -> frozenset[type]:
    """The types a simple chain contract passes unchanged (see :class:`Contract`)."""
    chain = _simple_chain(spec.node) if isinstance(spec, Expression) else None
    return _chain_kept(chain) if chain else frozenset()


def _quick_check(spec: Any) -> Any:
    """The check :attr:`Contract.quick` holds for ``spec``, or None."""
    if isinstance(spec, Expression):
        checked = _checked_chain(spec.node)
        comparison = _numeric_comparison(checked[1]) if checked is not None else None
        if checked is None or comparison is None:
            return None
        numbers = _chain_kept(checked[0]) & _NUMBER_TYPES  # (None: yaql compares it)
        if not numbers:
            return None
        compare, number = comparison
        return lambda value: type(value) in numbers and compare(value, number)
    if isinstance(spec, list):
        kept = _kept_whole(*_list_bounds(spec))
        if not kept:
            return None
        return lambda value: type(value) is tuple and kept.issuperset(map(type, value))
    return None


_NUMBER_TYPES = frozenset({int, float})
#: the comparisons :func:`_numeric_comparison` knows, as yaql compares two numbers
_COMPARISONS = {">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le,
                "=": operator.eq, "!=": operator.ne}


def _numeric_comparison(node: Any) -> tuple[Any, Any] | None:
    """``$ >= 0`` (``$`` compared with a number) -> (operator.ge, 0); None otherwise."""
    from yaql.language import expressions as ast
    if not (isinstance(node, ast.BinaryOperator) and node.operator in _COMPARISONS):
        return None
    left, right = node.args
    if isinstance(left, ast.GetContextValue) and left.path.value == "$" \
            and type(right) is ast.Constant and type(right.value) in _NUMBER_TYPES:
        return _COMPARISONS[node.operator], right.value
    return None


def _makes_objects(spec: Any) -> bool:
    """Whether ``spec`` is ``$.class(Name)`` (``.notNull()``) or a list contract whose
    item contracts all are."""
    if isinstance(spec, Expression):
        return _class_check(spec.node) is not None
    if not isinstance(spec, list):
        return False
    items, _ = _list_bounds(spec)
    return bool(items) and all(isinstance(i, Expression) and _makes_objects(i) for i in items)


def _simple_chain(node: Any) -> list[str] | None:
    """``$.int().notNull()`` -> ["int", "notNull"]; None for anything richer."""
    from yaql.language import expressions as ast
    if isinstance(node, ast.Statement):
        node = node.expression
    names: list[str] = []
    while isinstance(node, ast.BinaryOperator) and node.operator == ".":
        target, call = node.args
        if type(call) is not ast.Function or call.args or call.name not in _ARGUMENTLESS:
            return None
        names.append(call.name)
        node = target
    if isinstance(node, ast.GetContextValue) and node.path.value == "$":
        names.reverse()
        return names
    return None


def _class_check(node: Any) -> tuple[str, bool] | None:
    """``$.class(Name)`` -> ("Name", False), ``$.class(Name).notNull()`` -> ("Name",
    True); None for anything else."""
    from yaql.language import expressions as ast
    if isinstance(node, ast.Statement):
        node = node.expression
    not_null = False
    if isinstance(node, ast.BinaryOperator) and node.operator == "." \
            and type(node.args[1]) is ast.Function and node.args[1].name == "notNull" \
            and not node.args[1].args:
        node = node.args[0]
        not_null = True
    if not (isinstance(node, ast.BinaryOperator) and node.operator == "."):
        return None
    target, call = node.args
    if not (isinstance(target, ast.GetContextValue) and target.path.value == "$"):
        return None
    if type(call) is not ast.Function or call.name != "class" or len(call.args) != 1:
        return None
    (argument,) = call.args
    if type(argument) is ast.KeywordConstant and isinstance(argument.value, str):
        return argument.value, not_null
    return None


def _class_contract(class_name: str, not_null: bool, expr: Expression) -> Any:
    """``$.class(Name)[.notNull()]`` without yaql's call machinery: an object of
    exactly that class passes as it is; anything else (a subclass, a dict, an id,
    null) goes through the contract functions."""
    functions: list[Any] = []
    arguments = (lambda ctx: class_name,)

    def apply(value: Any, scope: ContractScope) -> Any:
        if type(value) is MuranoObject:
            try:
                cls = scope.frame.murano_class.resolve_type(class_name)
            except Exception:  # noqa: BLE001, S110 - the contract below raises it again
                pass
            else:
                if value.murano_class is cls:
                    return value
        if not functions:
            table = scope.frame.executor.runtime.contract_functions
            functions.extend((table["class"], table["notNull"]))
        ctx = scope  # the scope is all the context they need
        try:
            value = functions[0](ctx, value, arguments, {})
        except yaql_exceptions.YaqlException as exc:
            if errors.stack_of(exc):
                raise
            raise _not_evaluated(expr, exc) from None
        return functions[1](ctx, value, (), {}) if not_null else value
    return apply


def _chain_contract(names: list[str]) -> Any:
    return _Chain(names)


class _Chain:
    """A simple contract chain (``$.int().notNull()``): its functions called directly,
    and not at all for a value of a type every one of them returns as it is
    (``$.string()`` keeps text and null)."""

    __slots__ = ("names", "functions", "unchanged")

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.functions: tuple[Any, ...] | None = None
        self.unchanged = _chain_kept(names)

    def __call__(self, value: Any, scope: ContractScope) -> Any:
        if type(value) in self.unchanged:
            return value
        functions = self.functions
        if functions is None:
            table = scope.frame.executor.runtime.contract_functions
            functions = self.functions = tuple(table[n] for n in self.names)
        for func in functions:
            value = func(scope, value, (), {})  # the scope is all the context they need
        return value


def _constant_contract(expected: Any) -> Any:
    def apply(value: Any, scope: ContractScope) -> Any:
        if value != expected or type(value) is not type(expected) and not (
                isinstance(value, (int, float)) and isinstance(expected, (int, float))):
            raise scope.violation(f"value {value!r} is not {expected!r}")
        return value
    return apply


def _list_bounds(spec: list) -> tuple[list[Any], list[int]]:
    """A list contract's item contracts and its bounds (the trailing ints, at most two)."""
    items = list(spec)
    bounds: list[int] = []
    while items and type(items[-1]) is int and len(bounds) < 2:
        bounds.insert(0, items.pop())
    return items, bounds


def _kept_whole(items: list[Any], bounds: list[int]) -> frozenset[type]:
    """The item types of a tuple a list contract keeps whole (its one item contract
    keeps them, and it has no bounds); empty for other list contracts."""
    return _kept_types(items[0]) if len(items) == 1 and not bounds else frozenset()


def _list_contract(spec: list, position: Position | None) -> Any:
    items, bounds = _list_bounds(spec)
    if not items and bounds:
        raise errors.DslContractSyntaxError(
            "a list contract needs an item contract before its bounds", position)
    minimum = bounds[0] if bounds else 0
    maximum = bounds[1] if len(bounds) > 1 else None
    item_contracts = [_compile(i, position) for i in items]
    kept = _kept_whole(items, bounds)

    def apply(value: Any, scope: ContractScope) -> Any:
        counted = bool(kept) and type(value) is tuple
        if counted:
            _spend(scope, len(value))
            if kept.issuperset(map(type, value)):
                return value
        if value is None:
            value = ()
        elif isinstance(value, (str, Mapping, MuranoObject, ObjectView)) \
                or not isinstance(value, (list, tuple, set, frozenset)) and \
                not hasattr(value, "__iter__"):
            value = (value,)
        value = tuple(value)
        if len(value) > ITERATOR_LIMIT:  # (model data reaches a list of objects unfrozen)
            raise yaql_exceptions.CollectionTooLargeException(ITERATOR_LIMIT)
        if len(value) < minimum:
            raise scope.violation(f"list must have at least {minimum} items, got {len(value)}")
        if maximum is not None and len(value) > maximum:
            raise scope.violation(f"list must have at most {maximum} items, got {len(value)}")
        if not item_contracts:
            return value
        if not counted:
            _spend(scope, len(value))
        out = []
        for index, item in enumerate(value):
            contract = item_contracts[min(index, len(item_contracts) - 1)]
            if type(contract) is _Chain and type(item) in contract.unchanged:
                out.append(item)  # checked without a scope of its own
            else:
                out.append(contract(item, scope.at(index)))
        result = tuple(out)
        # every item as it was: the list itself (known to freeze() as frozen, maybe)
        return value if all(map(operator.is_, result, value)) else result

    return apply


def _spend(scope: ContractScope, items: int) -> None:
    """Count a step per item a list contract checks: a contract on a list of lists is
    as much work as a loop over every item (a million items in one call checked
    without a step, so the time limit was read minutes apart)."""
    scope.frame.executor.budget.spend(items)


def _dict_contract(spec: dict, position: Position | None) -> Any:
    fixed: dict[Any, Any] = {}
    key_contract = None
    value_contract = None
    for key, item in spec.items():
        if isinstance(key, Expression):
            if key_contract is not None:
                raise errors.DslContractSyntaxError(
                    "a dict contract may have only one expression key", position)
            key_contract = _expression_contract(key)
            value_contract = _compile(item, position)
        else:
            fixed[key] = _compile(item, position)
    # Records of scalars that went through as they were, every check skipped by its chain
    # (so nothing about the scope mattered), by id, kept alive so the id stays theirs: a
    # list of records checked again at every append checks each record once.
    passed: dict[int, FrozenDict] = {}
    declared = tuple(fixed) if all(type(k) is str for k in fixed) else None

    def apply(value: Any, scope: ContractScope) -> Any:
        if passed and passed.get(id(value)) is value:
            return value
        if value is None:
            value = {}
        if type(value) is not FrozenDict and not isinstance(value, Mapping):
            raise scope.violation(f"value {value!r} is not a dict")
        if not fixed and key_contract is None:
            return value
        out: dict[Any, Any] = {}
        # the declared (text) keys in their order and nothing else: the value may be its
        # own result
        same = type(value) is FrozenDict and key_contract is None and declared is not None \
            and len(value) == len(declared) and tuple(value) == declared
        skipped = True
        for key, contract in fixed.items():
            item = value.get(key)
            if type(contract) is _Chain and type(item) in contract.unchanged:
                result = item  # checked without a scope of its own
                skipped = skipped and type(item) in _SCALAR_TYPES
            else:
                result = contract(item, scope.at(key))
                skipped = False
            out[key] = result
            if result is not item:
                same = False
        if same:
            if skipped:
                if len(passed) >= _PASSED_KEPT:
                    passed.clear()
                passed[id(value)] = value
            return value  # each value as it was
        if key_contract is not None:
            for key, item in value.items():
                if key in fixed:
                    continue
                new_key = key_contract(key, scope.at(key))
                out[new_key] = value_contract(item, scope.at(key))
        return FrozenDict(out)

    return apply
