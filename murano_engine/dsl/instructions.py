"""Method bodies: instructions, block constructs and assignments.

A body compiles to a :class:`Block`, a callable taking the evaluation context
and returning a control signal: ``None`` to go on, :data:`BREAK`,
:data:`CONTINUE` or a :class:`Returned` value. Signals are plain return
values, not exceptions, which keeps loops cheap.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping

from yaql.language import expressions as ast
from yaql.language.utils import FrozenDict

from murano_engine.dsl import concurrency, errors, values
from murano_engine.dsl.compiler import compile_variable
from murano_engine.dsl.contexts import DslContext
from murano_engine.dsl.errors import LoadError, MuranoPlException, Position
from murano_engine.dsl.expressions import Expression
from murano_engine.dsl.objects import MuranoObject, ObjectView, TypeRef
from murano_engine.dsl.yaml_loader import position_of

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    Statement = Callable[[Any], Any]

# Results a statement need not look into (a lazy query result is none of these).
_VALUES = frozenset({str, int, float, bool, tuple, FrozenDict, MuranoObject})

BREAK = object()
CONTINUE = object()
LOOP_LIMIT = 1_000_000


class Returned:
    """The signal of a ``Return``."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class Block:
    """A compiled list of instructions."""

    __slots__ = ("statements",)

    def __init__(self, statements: list[tuple[Position | None, Statement]]) -> None:
        self.statements = statements

    def __call__(self, ctx: Any) -> Any:
        frame = ctx.frame
        budget = frame.executor.budget
        for position, statement in self.statements:
            frame.position = position
            budget.left -= 1
            if budget.left < 0:
                budget.checkpoint()
            signal = statement(ctx)
            if signal is not None:
                return signal
        return None


def compile_body(body: Any, position: Position | None) -> Block:
    """Compile a method body (a list of instructions or a single one)."""
    return _block(body, position)


def _block(body: Any, position: Position | None) -> Block:
    if body is None:
        return Block([])
    items = body if isinstance(body, list) else [body]
    statements = []
    for item in items:
        where = _position(item) or position
        statements.append((where, _statement(item, where)))
    return Block(statements)


def _position(item: Any) -> Position | None:
    if isinstance(item, Expression):
        return item.position
    return position_of(item)


def _statement(item: Any, position: Position | None) -> Statement:
    if isinstance(item, Expression):
        evaluate = item.evaluate

        def expression_statement(ctx: Any) -> None:
            result = evaluate(ctx)
            if result is not None and type(result) not in _VALUES and isinstance(result, Iterator):
                # A lazy query as a statement still runs: ``- $list.select(f($))``
                values.freeze(result)

        return expression_statement
    if isinstance(item, Mapping) and item:
        keys = list(item)
        if any(isinstance(k, Expression) for k in keys):
            if len(keys) != 1:
                raise LoadError("an assignment must be the only key of its mapping", position)
            return _assignment(keys[0], item[keys[0]], position)
        if all(isinstance(k, str) for k in keys):
            return _macro(item, position)
    raise LoadError(f"syntax is incorrect: {item!r} is not an instruction", position)


# -- data templates --------------------------------------------------------------

class ConstantData:
    """What :func:`compile_data` makes of data without expressions: its frozen value,
    which callers may take without a context to evaluate in."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self, ctx: Any) -> Any:
        return self.value


def compile_data(value: Any) -> Callable[[Any], Any]:
    """Evaluate a value with expressions nested in dicts and lists (keys too)."""
    if isinstance(value, Expression):
        return _frozen_value(value)
    if not _has_expression(value):
        return ConstantData(values.freeze(value))
    if isinstance(value, Mapping):
        pairs = [(compile_data(k), compile_data(v)) for k, v in value.items()]
        return lambda ctx: FrozenDict({k(ctx): v(ctx) for k, v in pairs})
    items = [compile_data(v) for v in value]
    return lambda ctx: tuple(i(ctx) for i in items)


def _frozen_value(expression: Expression) -> Callable[[Any], Any]:
    """The expression's value, frozen; its compiled code called directly once made."""
    freeze = values.freeze
    kept = values.KEPT_TYPES
    compiled: Callable[[Any], Any] | None = None

    def frozen_value(ctx: Any) -> Any:
        nonlocal compiled
        if compiled is None:
            result = expression.evaluate(ctx)
            compiled = expression.compiled()
        else:
            result = compiled(ctx)
        return result if type(result) in kept else freeze(result)

    return frozen_value


def _has_expression(value: Any) -> bool:
    if isinstance(value, Expression):
        return True
    if isinstance(value, Mapping):
        return any(_has_expression(k) or _has_expression(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_expression(v) for v in value)
    return False


def _code(value: Any, position: Position | None) -> Block:
    return _block(value, position)


def _loop_body(value: Any, position: Position | None) -> Block:
    """A loop's body; an empty one still counts a step each time it runs."""
    block = _block(value, position)
    return block if block.statements else Block([(position, _nothing)])


def _nothing(ctx: Any) -> None:
    return None


# -- assignment ------------------------------------------------------------------

if TYPE_CHECKING:
    Getter = Callable[[Any], Any]
    Setter = Callable[[Any, Any], None]


def _assignment(target: Expression, value: Any, position: Position | None) -> Statement:
    _, setter = _lhs(target.node.expression, target.source, position)
    if setter is None:
        setter = _refused(target.source)
    evaluate = compile_data(value)

    def assign(ctx: Any) -> None:
        setter(ctx, evaluate(ctx))

    return assign


def _lhs(node: ast.Expression, source: str, position: Position | None,
         ) -> tuple[Getter, Setter | None]:
    """A getter and a setter for an assignment target, or an error."""
    if isinstance(node, ast.GetContextValue):
        name = node.path.value
        if name in ("$", "$this"):
            return compile_variable(name), None
        key = "$1" if name == "$" else name

        def get_variable(ctx: Any) -> Any:
            return ctx.get_data(key)

        def set_variable(ctx: Any, value: Any) -> None:
            ctx.frame.context._data[key] = value

        return get_variable, set_variable
    if isinstance(node, ast.BinaryOperator) and node.operator == "." \
            and isinstance(node.args[1], ast.KeywordConstant):
        return _member_lhs(node.args[0], node.args[1].value, source, position)
    if isinstance(node, ast.IndexExpression) and len(node.args) == 2:
        return _index_lhs(node.args[0], _deferred(node.args[1]), source, position)
    if isinstance(node, (ast.BinaryOperator, ast.UnaryOperator, ast.Function)):
        return _deferred(node), None
    raise LoadError(f"cannot assign to {source!r}", position)


def _refused(source: str) -> Setter:
    """The setter of a target no value can be assigned to (``$this``): Murano's
    ValueError when the assignment runs."""
    def refuse(ctx: Any, value: Any) -> None:
        raise ValueError(f"Cannot assign to {source}")
    return refuse


def _deferred(node: ast.Expression) -> Getter:
    """``node`` evaluated as an expression: compiled on first use, for the run's runtime."""
    return Expression(str(node), None, node).evaluate


def _member_lhs(parent_node: ast.Expression, name: str, source: str,
                position: Position | None) -> tuple[Getter, Setter]:
    get_parent, set_parent = _lhs(parent_node, source, position)

    def get_member(ctx: Any) -> Any:
        """The value at this place, as a deeper assignment reads it (an empty dict
        where a key or an object's property is not set yet, as in Murano)."""
        return _attribute(ctx, get_parent(ctx), name)

    def set_member(ctx: Any, value: Any) -> None:
        parent = get_parent(ctx)
        if isinstance(parent, (MuranoObject, ObjectView)):
            ctx.frame.executor.set_property(parent, name, value, ctx.frame)
            return
        if isinstance(parent, TypeRef):
            ctx.frame.executor.set_static(parent.murano_class, name, value, ctx.frame)
            return
        if not isinstance(parent, Mapping):
            raise ValueError(_NOT_ATTRIBUTABLE)
        if set_parent is None:
            raise errors.InvalidLhsTargetError(f"cannot assign to {source!r}")
        updated = dict(parent)
        updated[name] = value
        set_parent(ctx, FrozenDict(updated))

    return get_member, set_member


#: Murano's words (a ValueError there too, which packages catch by that name)
_NOT_ATTRIBUTABLE = "attribution may only be applied to objects and dictionaries"
_NOT_INDEXABLE = "indexation may only be applied to lists"
_EMPTY = FrozenDict()


def _attribute(ctx: Any, parent: Any, name: Any) -> Any:
    if isinstance(parent, (MuranoObject, ObjectView)):
        found = ctx.frame.executor.get_property(parent, name, ctx.frame, lenient=True)
        return _EMPTY if found is None else found
    if isinstance(parent, TypeRef):
        return ctx.frame.executor.get_static(parent.murano_class, name, ctx.frame)
    if isinstance(parent, Mapping):
        return parent.get(name, _EMPTY)
    raise ValueError(_NOT_ATTRIBUTABLE)


def _index_lhs(parent_node: ast.Expression, index: Getter, source: str,
               position: Position | None) -> tuple[Getter, Setter]:
    """``$x[i]`` as a target: an integer index places an item in a list (at its end
    when it is past the end, as in Murano) or sets a dict's key, and leaves any other
    value as it is; any other key sets a dict's key or an object's property."""
    get_parent, set_parent = _lhs(parent_node, source, position)

    def get_item(ctx: Any) -> Any:
        parent = get_parent(ctx)
        key = index(ctx)
        if type(key) is not int:
            return _attribute(ctx, parent, key)
        if not isinstance(parent, (tuple, list)):
            raise ValueError(_NOT_INDEXABLE)
        return parent[key]

    def set_item(ctx: Any, value: Any) -> None:
        parent = get_parent(ctx)
        key = index(ctx)
        if type(key) is int:
            if isinstance(parent, (tuple, list)):
                if set_parent is None:
                    raise errors.InvalidLhsTargetError(f"cannot assign to {source!r}")
                # Murano's splice: past the end appends; a negative index keeps its quirk
                # ([a, b, c][-1] = x makes [a, b, x, a, b, c])
                set_parent(ctx, (*parent[:key], value, *parent[key + 1:]))
                return
            if not isinstance(parent, Mapping):
                return  # Murano leaves any other value as it is (text, a number, null)
        elif isinstance(parent, (MuranoObject, ObjectView)):
            ctx.frame.executor.set_property(parent, key, value, ctx.frame)
            return
        elif isinstance(parent, TypeRef):
            ctx.frame.executor.set_static(parent.murano_class, key, value, ctx.frame)
            return
        elif not isinstance(parent, Mapping):
            raise ValueError(_NOT_ATTRIBUTABLE)
        if set_parent is None:
            raise errors.InvalidLhsTargetError(f"cannot assign to {source!r}")
        updated = dict(parent)
        updated[key] = value
        set_parent(ctx, FrozenDict(updated))

    return get_item, set_item


# -- block constructs --------------------------------------------------------------

if TYPE_CHECKING:
    Builder = Callable[[Mapping, Position | None], Statement]
_MACROS: list[tuple[frozenset[str], frozenset[str], Builder]] = []


def _macro_for(required: set[str],
               optional: set[str] = frozenset()) -> Callable[[Builder], Builder]:
    def register(builder: Builder) -> Builder:
        _MACROS.append((frozenset(required), frozenset(optional), builder))
        return builder
    return register


def _macro(item: Mapping, position: Position | None) -> Statement:
    keys = set(item)
    for required, optional, builder in _MACROS:
        if required <= keys <= required | optional:
            return builder(item, position)
    raise LoadError(f"unknown instruction with keys {sorted(keys)}", position)


@_macro_for({"Do"})
def _do(item: Mapping, position: Position | None) -> Statement:
    return _code(item["Do"], position)


@_macro_for({"Return"})
def _return(item: Mapping, position: Position | None) -> Statement:
    evaluate = compile_data(item["Return"])
    new_signal = object.__new__

    def return_(ctx: Any) -> Returned:
        signal = new_signal(Returned)  # no __init__ to run: one of these a call
        signal.value = evaluate(ctx)
        return signal

    return return_


def _empty(item: Mapping, key: str, position: Position | None) -> None:
    if item[key] not in (None, ""):
        raise LoadError(f"{key} takes no value", position)


@_macro_for({"Break"})
def _break(item: Mapping, position: Position | None) -> Statement:
    _empty(item, "Break", position)
    return lambda ctx: BREAK


@_macro_for({"Continue"})
def _continue(item: Mapping, position: Position | None) -> Statement:
    _empty(item, "Continue", position)
    return lambda ctx: CONTINUE


@_macro_for({"Parallel"}, {"Limit"})
def _parallel(item: Mapping, position: Position | None) -> Statement:
    body = item["Parallel"]
    branches = [_block(b, _position(b) or position)
                for b in (body if isinstance(body, list) else [body])]
    limit = compile_data(item.get("Limit"))

    def parallel(ctx: Any) -> None:
        count = limit(ctx) or len(branches)

        def branch_runner(block: Block) -> Callable[[], Any]:
            return lambda: block(DslContext(ctx))

        concurrency.run_all([branch_runner(b) for b in branches], int(count))

    return parallel


@_macro_for({"If", "Then"}, {"Else"})
def _if(item: Mapping, position: Position | None) -> Statement:
    condition = compile_data(item["If"])
    then = _code(item["Then"], position)
    otherwise = _code(item.get("Else"), position)

    def if_(ctx: Any) -> Any:
        if condition(ctx):
            return then(ctx)
        return otherwise(ctx)

    return if_


@_macro_for({"While", "Do"})
def _while(item: Mapping, position: Position | None) -> Statement:
    if not isinstance(item["While"], Expression):
        raise LoadError("While needs an expression", position)
    condition = item["While"].evaluate
    body = _loop_body(item["Do"], position)

    def while_(ctx: Any) -> Any:
        count = 0
        while condition(ctx):
            count += 1
            if count > LOOP_LIMIT:
                raise errors.LoopLimitExceededError(
                    f"loop ran more than {LOOP_LIMIT} iterations")
            signal = body(ctx)
            if signal is not None and signal is not CONTINUE:
                return None if signal is BREAK else signal
        return None

    return while_


@_macro_for({"For", "In", "Do"})
def _for(item: Mapping, position: Position | None) -> Statement:
    name = item["For"]
    if not isinstance(name, str):
        raise LoadError("For takes a variable name without '$'", position)
    key = "$" + name
    collection = compile_data(item["In"])
    body = _loop_body(item["Do"], position)

    def for_(ctx: Any) -> Any:
        items = collection(ctx)
        if items is None:
            return None
        scope = ctx.frame.context._data
        for value in values.freeze(items):
            scope[key] = value
            signal = body(ctx)
            if signal is not None and signal is not CONTINUE:
                return None if signal is BREAK else signal
        return None

    return for_


@_macro_for({"Repeat", "Do"})
def _repeat(item: Mapping, position: Position | None) -> Statement:
    times = compile_data(item["Repeat"])
    body = _loop_body(item["Do"], position)

    def repeat(ctx: Any) -> Any:
        count = int(times(ctx))
        if count > LOOP_LIMIT:
            raise errors.LoopLimitExceededError(f"Repeat of {count} exceeds {LOOP_LIMIT}")
        for _ in range(count):
            signal = body(ctx)
            if signal is not None and signal is not CONTINUE:
                return None if signal is BREAK else signal
        return None

    return repeat


def _same_constant(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


@_macro_for({"Match", "Value"}, {"Default"})
def _match(item: Mapping, position: Position | None) -> Statement:
    cases = item["Match"]
    if not isinstance(cases, Mapping):
        raise LoadError("Match takes a mapping of constants to blocks", position)
    compiled = [(key, _code(block, position)) for key, block in cases.items()]
    value = compile_data(item["Value"])
    default = _code(item.get("Default"), position) if "Default" in item else None

    def match(ctx: Any) -> Any:
        actual = value(ctx)
        for key, block in compiled:
            if _same_constant(key, actual):
                return block(ctx)
        if default is not None:
            return default(ctx)
        return None

    return match


@_macro_for({"Switch"}, {"Default"})
def _switch(item: Mapping, position: Position | None) -> Statement:
    cases = item["Switch"]
    if not isinstance(cases, Mapping):
        raise LoadError("Switch takes a mapping of conditions to blocks", position)
    compiled = [(compile_data(key), _code(block, position)) for key, block in cases.items()]
    default = _code(item.get("Default"), position) if "Default" in item else None

    def switch(ctx: Any) -> Any:
        matched = False
        for condition, block in compiled:
            if condition(ctx):
                matched = True
                signal = block(ctx)
                if signal is not None:
                    return signal
        if not matched and default is not None:
            return default(ctx)
        return None

    return switch


@_macro_for({"Throw"}, {"Message", "Extra", "Cause"})
def _throw(item: Mapping, position: Position | None) -> Statement:
    names = compile_data(_exception_names(item["Throw"]))
    message = compile_data(item.get("Message"))
    extra = compile_data(item.get("Extra"))
    cause = compile_data(item.get("Cause"))

    def throw(ctx: Any) -> None:
        frame = ctx.frame
        resolved = [_exception_name(n, frame) for n in _as_list(names(ctx))]
        cause_value = cause(ctx)
        raise MuranoPlException(
            resolved, _text(message(ctx)), frame.stack(), values.thaw(extra(ctx)) or {},
            cause=frame.executor.exception_of(cause_value) if cause_value else None)

    return throw


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return list(value)
    return [value]


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


_TYPE_NAME = re.compile(r"^([A-Za-z_]\w*)?:?[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def _exception_names(value: Any) -> Any:
    """``Throw`` and ``With`` names are names, as in Murano: ``ns:Name`` needs no class."""
    if isinstance(value, (tuple, list)):
        return [_exception_names(v) for v in value]
    if isinstance(value, Expression) and _TYPE_NAME.match(value.source.strip()):
        return value.source.strip()
    return value


def _exception_name(name: Any, frame: Any) -> str:
    if isinstance(name, TypeRef):
        return name.murano_class.name
    return frame.murano_class.resolve_name(str(name))


class _Catch:
    __slots__ = ("names", "variable", "body")

    def __init__(self, clause: Any, position: Position | None) -> None:
        if not isinstance(clause, Mapping) or not set(clause) <= {"With", "As", "Do"}:
            raise LoadError("each Catch clause is a mapping of With, As and Do", position)
        self.names = compile_data(_exception_names(clause.get("With")))
        self.variable = clause.get("As")
        self.body = _code(clause.get("Do"), position)

    def match(self, ctx: Any, exc: MuranoPlException) -> str | None:
        """The exception name this clause catches ``exc`` by, or None."""
        names = self.names(ctx)
        if names is None:
            return exc.names[0] if exc.names else ""
        wanted = [_exception_name(n, ctx.frame) for n in _as_list(names)]
        return next((name for name in exc.names if name in wanted), None)


@_macro_for({"Try"}, {"Catch", "Else", "Finally"})
def _try(item: Mapping, position: Position | None) -> Statement:
    body = _code(item["Try"], position)
    clauses_spec = item.get("Catch") or []
    if isinstance(clauses_spec, Mapping):
        clauses_spec = [clauses_spec]
    clauses = [_catch_clause(c, position) for c in clauses_spec]
    otherwise = _code(item.get("Else"), position) if "Else" in item else None
    final = _code(item.get("Finally"), position) if "Finally" in item else None

    def try_(ctx: Any) -> Any:
        signal = None
        try:
            try:
                signal = body(ctx)
            except Exception as exc:  # noqa: BLE001 - MuranoPL decides what it catches
                murano_exc = ctx.frame.executor.to_murano_exception(exc, ctx.frame)
                for clause in clauses:
                    matched = clause.match(ctx, murano_exc)
                    if matched is not None:
                        signal = _handle(ctx, clause, murano_exc, matched)
                        break
                else:
                    raise
            else:
                if otherwise is not None:
                    signal = otherwise(ctx)
        finally:
            if final is not None:
                final_signal = final(ctx)
                if final_signal is not None:
                    signal = final_signal
        return signal

    return try_


def _catch_clause(clause: Any, position: Position | None) -> _Catch:
    return _Catch(clause, position_of(clause) or position)


def _handle(ctx: Any, clause: _Catch, exc: MuranoPlException, matched: str) -> Any:
    scope = ctx.frame.context._data
    previous = scope.get("$?currentException")
    scope["$?currentException"] = exc
    try:
        if clause.variable:
            scope["$" + str(clause.variable)] = ctx.frame.executor.exception_object(
                exc, matched or None)
        return clause.body(ctx)
    finally:
        scope["$?currentException"] = previous


@_macro_for({"Rethrow"})
def _rethrow(item: Mapping, position: Position | None) -> Statement:
    _empty(item, "Rethrow", position)

    def rethrow(ctx: Any) -> None:
        exc = ctx.frame.context._data.get("$?currentException")
        if exc is None:
            raise TypeError("Rethrow is only valid inside Catch")
        raise exc

    return rethrow
