"""Compiling yaql syntax trees into Python closures.

yaql's own evaluator resolves every operator and function through overload
matching, which costs tens of microseconds a node. MuranoPL spends most of its
time in a few shapes - variables, ``$.property``, ``$obj.method(...)``,
arithmetic, comparisons, indexing - so those compile to direct closures here.
Everything else (the yaql standard library: ``len``, ``select``, ``join`` ...)
still runs through yaql's runner, with the arguments wrapped as
:class:`Compiled` nodes so lambdas evaluate through the fast path again.

A closure takes one argument, the evaluation context, and returns the value.
Closures are compiled for one :class:`~murano_engine.dsl.runtime.Runtime`
(member access, calls and Murano's functions), which they keep.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping

from yaql.language import exceptions as yaql_exceptions
from yaql.language import expressions as ast
from yaql.language import utils as yaql_utils
from yaql.language.utils import FrozenDict

from murano_engine.dsl import errors, queries
from murano_engine.dsl.budget import Regex, check_product, check_repetition, regex_search
from murano_engine.dsl.contexts import PLAIN_CONTEXTS, DslContext, frame_of
from murano_engine.dsl.limits import MEMORY_QUOTA
from murano_engine.dsl.values import KEPT_TYPES, check_built, evaluated_null, literal_null

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

    from murano_engine.dsl.runtime import Runtime

if TYPE_CHECKING:
    Evaluator = Callable[[Any], Any]
NO_VALUE = yaql_utils.NO_VALUE

NORMAL = 0
CONTRACT = 1

_NUMBERS = frozenset({int, float})
_SEQUENCES = (tuple, list)


class Compiled(ast.Expression):
    """A compiled node that yaql's runner can still evaluate lazily."""

    __slots__ = ("fn", "node", "runtime")

    def __init__(self, fn: Evaluator, node: ast.Expression, runtime: Runtime) -> None:
        self.fn = fn
        self.node = node
        self.runtime = runtime
        self.uses_receiver = getattr(node, "uses_receiver", False)

    def __call__(self, receiver: Any, context: Any, engine: Any) -> Any:
        budget = (getattr(context, "frame", None) or frame_of(context)).executor.budget
        budget.left -= 1
        if budget.left < 0:
            budget.checkpoint()
        if receiver is NO_VALUE:
            return self.fn(context)
        node = self.node
        runtime = self.runtime
        if isinstance(node, ast.KeywordConstant):
            return runtime.get_member(receiver, node.value, context)
        if type(node) is ast.Function:
            args, kwargs = _compile_arguments(node.args, runtime)
            return runtime.call_member(receiver, node.name, args, kwargs, context,
                                       _yaql_args(node.args, args, kwargs, runtime))
        return self.fn(context)

    def __str__(self) -> str:
        return str(self.node)


def compile_expression(node: ast.Expression, runtime: Runtime, mode: int = NORMAL) -> Evaluator:
    """Compile a parsed yaql expression (a ``Statement`` or any node) for ``runtime``."""
    if isinstance(node, ast.Statement):
        node = node.expression
    return _compile(node, runtime, mode)


def _compile(node: ast.Expression, runtime: Runtime, mode: int = NORMAL) -> Evaluator:
    kind = type(node)
    if kind is ast.Constant or kind is ast.KeywordConstant:
        value = node.value
        if value is None and kind is ast.Constant:
            return literal_null  # (a method call passes it on as a literal null)
        return lambda ctx: value
    if kind is ast.GetContextValue:
        return compile_variable(node.path.value)
    if kind is ast.Wrap:
        inner = _compile(node.expr, runtime, mode)
        return evaluated_null if inner is literal_null else inner
    if kind is ast.BinaryOperator:
        return _compile_binary(node, runtime, mode)
    if kind is ast.UnaryOperator:
        return _compile_unary(node, runtime, mode)
    if kind is ast.IndexExpression:
        return _compile_index(node, runtime, mode)
    if kind is ast.ListExpression:
        items = [_compile(a, runtime, mode) for a in node.args]
        if len(items) == 1:  # ``$list + [$item]`` (one item: no bigger written out)
            (only,) = items
            return lambda ctx: (only(ctx),)

        def build_list(ctx: Any) -> Any:
            made = tuple([f(ctx) for f in items])
            if not KEPT_TYPES.issuperset(map(type, made)):
                check_built(made)  # ``[$x, $x]`` doubles $x written out
            return made

        return build_list
    if kind is ast.MapExpression:
        return _compile_map(node, runtime, mode)
    if kind is ast.Function:
        return _compile_function(node, runtime)
    if kind is ast.MappingRuleExpression:
        return queries.Rule(_compile(node.source, runtime), _compile(node.destination, runtime))
    return _yaql_fallback(node, runtime)


def _yaql_fallback(node: ast.Expression, runtime: Runtime) -> Evaluator:
    def evaluate(ctx: Any) -> Any:
        return node(NO_VALUE, ctx, runtime.engine)
    return evaluate


# -- variables -----------------------------------------------------------------

def _variable_key(name: str) -> str:
    if not name.startswith("$"):
        name = "$" + name
    return "$1" if name == "$" else name


def compile_variable(name: str) -> Evaluator:
    """A variable's lookup (``$name``; ``$`` is ``$1``): no runtime needed."""
    key = _variable_key(name)

    def lookup(ctx: Any) -> Any:
        if type(ctx) is DslContext:  # the common case: a variable of the frame
            data = ctx._data
            if key in data:
                return data[key]
        c = ctx
        while c is not None:
            if type(c) in PLAIN_CONTEXTS:
                data = c._data
                if key in data:
                    return data[key]
                c = c._parent_context
            else:
                return c.get_data(key)
        return None

    return lookup


# -- operators -----------------------------------------------------------------

_ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "-": operator.sub,
    ">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le,
    "mod": operator.mod,
}
_STRING_OPS = frozenset({">", "<", ">=", "<="})


def _compile_binary(node: ast.BinaryOperator, runtime: Runtime, mode: int) -> Evaluator:
    op = node.operator
    left_node, right_node = node.args
    if op in (".", "?."):
        return _compile_dot(left_node, right_node, op == "?.", runtime, mode)
    if op == ":":
        prefix, name = _keyword(left_node), _keyword(right_node)
        if prefix is not None and name is not None:
            return lambda ctx: runtime.type_reference(prefix, name, ctx)
        return _yaql_fallback(node, runtime)
    left = _compile(left_node, runtime, mode)
    right = _compile(right_node, runtime, mode)
    if op == "and":
        def both(ctx: Any) -> Any:
            a = left(ctx)
            return right(ctx) if a else a
        return both
    if op == "or":
        def either(ctx: Any) -> Any:
            a = left(ctx)
            return a if a else right(ctx)
        return either
    if op == "is":
        return lambda ctx: runtime.is_instance(left(ctx), right(ctx), ctx)
    if op == "=":
        def equal(ctx: Any) -> Any:
            a = left(ctx)
            b = right(ctx)
            if type(a) in _NESTED or type(b) in _NESTED:
                _check_compared(a, b)
            return a == b
        return equal
    if op == "!=":
        def unequal(ctx: Any) -> Any:
            a = left(ctx)
            b = right(ctx)
            if type(a) in _NESTED or type(b) in _NESTED:
                _check_compared(a, b)
            return a != b
        return unequal
    name = node.name

    def fallback(ctx: Any, a: Any, b: Any) -> Any:
        return ctx(name, runtime.engine, NO_VALUE, ctx)(a, b)

    if op == "*":
        def multiply(ctx: Any) -> Any:
            a = left(ctx)
            b = right(ctx)
            ta, tb = type(a), type(b)
            if ta is int and tb is int:
                check_product(a, b)
                return a * b
            if ta in _NUMBERS and tb in _NUMBERS:
                return a * b
            check_repetition(a, b)
            return fallback(ctx, a, b)

        return multiply
    if op in _NUMERIC_CONSTANT_OPS and type(right_node) is ast.Constant \
            and type(right_node.value) in _NUMBERS:
        return _with_number(_NUMERIC_CONSTANT_OPS[op], left, _frame_variable(left_node),
                            right_node.value, fallback)
    if op == "+":
        plus = queries.plus
        not_handled = queries.NOT_HANDLED

        def add(ctx: Any) -> Any:
            a = left(ctx)
            b = right(ctx)
            ta, tb = type(a), type(b)
            if ta in _NUMBERS and tb in _NUMBERS:
                return a + b
            if ta is str and tb is str:
                if len(a) + len(b) > MEMORY_QUOTA:
                    raise yaql_exceptions.MemoryQuotaExceededException()
                return a + b
            result = plus(a, b)
            return fallback(ctx, a, b) if result is not_handled else result

        return add
    if op in _ARITHMETIC:
        func = _ARITHMETIC[op]
        strings = op in _STRING_OPS

        def arithmetic(ctx: Any) -> Any:
            a = left(ctx)
            b = right(ctx)
            ta, tb = type(a), type(b)
            if ta in _NUMBERS and tb in _NUMBERS:
                return func(a, b)
            if strings and ta is str and tb is str:
                if len(a) + len(b) > MEMORY_QUOTA:
                    raise yaql_exceptions.MemoryQuotaExceededException()
                return func(a, b)
            return fallback(ctx, a, b)

        return arithmetic
    if op == "/":
        def divide(ctx: Any) -> Any:
            a = left(ctx)
            b = right(ctx)
            if type(a) is int and type(b) is int:
                return a // b
            if type(a) in _NUMBERS and type(b) in _NUMBERS:
                return a / b
            return fallback(ctx, a, b)
        return divide
    if op == "in":
        def contains(ctx: Any) -> Any:
            a = left(ctx)
            b = right(ctx)
            result = queries.contains(a, b)
            return fallback(ctx, a, b) if result is queries.NOT_HANDLED else result
        return contains
    if op in ("=~", "!~"):
        matches = op == "=~"

        def match(ctx: Any) -> Any:
            a = left(ctx)
            b = right(ctx)
            if type(a) is str and (type(b) is str or type(b) is Regex):
                return regex_search(ctx, b, a) is matches
            return fallback(ctx, a, b)

        return match
    # Operators with lazy operands (``->``) or unknown ones: yaql decides.
    return _generic_operator(name, [left_node, right_node], runtime)


#: operators whose number operands need no check beyond their type
_NUMERIC_CONSTANT_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub,
    ">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le,
}


def _with_number(func: Callable[[Any, Any], Any], left: Evaluator, variable: str | None,
                 number: Any, fallback: Callable[[Any, Any, Any], Any]) -> Evaluator:
    """``left op number`` (``$n - 1``, ``$i < 10``): a number on the left is the common
    case; anything else goes where the general operator sends it. A ``variable`` on
    the left is read from the context's own data when it is there."""
    if variable is not None:
        def variable_with_number(ctx: Any) -> Any:
            if type(ctx) is DslContext and variable in ctx._data:
                a = ctx._data[variable]
            else:
                a = left(ctx)
            if type(a) in _NUMBERS:
                return func(a, number)
            return fallback(ctx, a, number)

        return variable_with_number

    def with_number(ctx: Any) -> Any:
        a = left(ctx)
        if type(a) in _NUMBERS:
            return func(a, number)
        return fallback(ctx, a, number)

    return with_number


def _frame_variable(node: ast.Expression) -> str | None:
    """The data key of a variable node (``$n`` -> "$n", ``$`` -> "$1"), else None."""
    if type(node) is ast.GetContextValue:
        return _variable_key(node.path.value)
    return None


def _compile_unary(node: ast.UnaryOperator, runtime: Runtime, mode: int) -> Evaluator:
    op = node.operator
    (arg_node,) = node.args
    if op == ":":
        name = _keyword(arg_node)
        if name is not None:
            return lambda ctx: runtime.type_reference("=", name, ctx)
        return _yaql_fallback(node, runtime)
    arg = _compile(arg_node, runtime, mode)
    if op == "not":
        return lambda ctx: not arg(ctx)
    name = node.name
    if op == "-":
        def negate(ctx: Any) -> Any:
            value = arg(ctx)
            if type(value) in _NUMBERS:
                return -value
            return ctx(name, runtime.engine, NO_VALUE, ctx)(value)
        return negate
    if op == "+":
        def plus(ctx: Any) -> Any:
            value = arg(ctx)
            if type(value) in _NUMBERS:
                return value
            return ctx(name, runtime.engine, NO_VALUE, ctx)(value)
        return plus
    return _generic_operator(name, [arg_node], runtime)


def _generic_operator(name: str, arg_nodes: list[ast.Expression], runtime: Runtime,
                      ) -> Evaluator:
    args = tuple(_wrap(a, runtime) for a in arg_nodes)

    def evaluate(ctx: Any) -> Any:
        return ctx(name, runtime.engine, NO_VALUE, ctx)(*args)

    return evaluate


def _keyword(node: ast.Expression) -> str | None:
    if isinstance(node, ast.KeywordConstant):
        return node.value
    return None


# -- member access and calls ---------------------------------------------------

def _compile_dot(left_node: ast.Expression, right_node: ast.Expression,
                 null_safe: bool, runtime: Runtime, mode: int) -> Evaluator:
    left = _compile(left_node, runtime, mode)
    variable = _frame_variable(left_node)
    if isinstance(right_node, ast.KeywordConstant):
        name = right_node.value
        if variable is not None and not null_safe:
            def variable_member(ctx: Any) -> Any:  # ``$.name``, ``$obj.name``
                if type(ctx) is DslContext and variable in ctx._data:
                    return runtime.get_member(ctx._data[variable], name, ctx)
                return runtime.get_member(left(ctx), name, ctx)

            return variable_member

        def member(ctx: Any) -> Any:
            receiver = left(ctx)
            if receiver is None and null_safe:
                return None
            return runtime.get_member(receiver, name, ctx)

        return member
    if type(right_node) is ast.Function:
        name = right_node.name
        args, kwargs = _compile_arguments(right_node.args, runtime)
        yaql_args = _yaql_args(right_node.args, args, kwargs, runtime)
        if mode == CONTRACT:
            contract = runtime.contract_function(name)
            if contract is not None:
                def check(ctx: Any) -> Any:
                    return contract(ctx, left(ctx), args, kwargs)
                return check

        if variable is not None and not null_safe:
            def variable_call(ctx: Any) -> Any:  # ``$.method()``, ``$obj.method()``
                if type(ctx) is DslContext and variable in ctx._data:
                    receiver = ctx._data[variable]
                else:
                    receiver = left(ctx)
                return runtime.call_member(receiver, name, args, kwargs, ctx, yaql_args)

            return variable_call

        def call(ctx: Any) -> Any:
            receiver = left(ctx)
            if receiver is None and null_safe:
                return None
            return runtime.call_member(receiver, name, args, kwargs, ctx, yaql_args)

        return call
    op_name = "#operator_?." if null_safe else "#operator_."
    right = _wrap(right_node, runtime)

    def other(ctx: Any) -> Any:
        return ctx(op_name, runtime.engine, NO_VALUE, ctx)(left(ctx), right)

    return other


def _compile_arguments(nodes: tuple, runtime: Runtime,
                       ) -> tuple[list[Evaluator], dict[str, Evaluator]]:
    args: list[Evaluator] = []
    kwargs: dict[str, Evaluator] = {}
    for node in nodes:
        if isinstance(node, ast.MappingRuleExpression) \
                and isinstance(node.source, ast.KeywordConstant):
            kwargs[node.source.value] = _compile(node.destination, runtime)
        else:
            if kwargs:
                raise errors.DslSyntaxError(
                    f"positional argument after a keyword argument in {node}")
            args.append(_compile(node, runtime))
    return args, kwargs


def _yaql_args(nodes: tuple, args: list[Evaluator], kwargs: dict[str, Evaluator],
               runtime: Runtime) -> tuple:
    """The call's arguments as yaql nodes, for calls yaql's runner resolves."""
    out: list[Any] = []
    positional = iter(args)
    for node in nodes:
        if isinstance(node, ast.MappingRuleExpression) \
                and isinstance(node.source, ast.KeywordConstant):
            out.append(ast.MappingRuleExpression(
                node.source, Compiled(kwargs[node.source.value], node.destination, runtime)))
        elif isinstance(node, ast.MappingRuleExpression):
            # ``cond => value`` stays a rule, both sides lazy (``switch``, ``dict``).
            next(positional)
            out.append(ast.MappingRuleExpression(_wrap(node.source, runtime),
                                                 _wrap(node.destination, runtime)))
        else:
            out.append(Compiled(next(positional), node, runtime))
    return tuple(out)


def _compile_function(node: ast.Function, runtime: Runtime) -> Evaluator:
    name = node.name
    args, kwargs = _compile_arguments(node.args, runtime)
    yaql_args = _yaql_args(node.args, args, kwargs, runtime)
    spec = runtime.murano_function(name)
    if spec is not None and not spec.raw:
        func = spec.func

        def call_murano(ctx: Any) -> Any:
            return func(ctx, *[a(ctx) for a in args],
                        **({k: v(ctx) for k, v in kwargs.items()} if kwargs else {}))

        return call_murano

    def call(ctx: Any) -> Any:
        return runtime.call_function(name, args, kwargs, ctx, yaql_args)

    return call


def _wrap(node: ast.Expression, runtime: Runtime) -> Compiled:
    return Compiled(_compile(node, runtime), node, runtime)


# -- indexing and literals -----------------------------------------------------

def _compile_index(node: ast.IndexExpression, runtime: Runtime, mode: int) -> Evaluator:
    value_node, *index_nodes = node.args
    value = _compile(value_node, runtime, mode)
    if len(index_nodes) != 1:
        wrapped = tuple(_wrap(n, runtime) for n in index_nodes)

        def multi(ctx: Any) -> Any:
            return ctx("#indexer", runtime.engine, NO_VALUE, ctx)(value(ctx), *wrapped)

        return multi
    index = _compile(index_nodes[0], runtime, mode)

    def subscript(ctx: Any) -> Any:
        container = value(ctx)
        key = index(ctx)
        if type(container) is FrozenDict:  # its dict's lookup: C code, FrozenDict's is Python
            return container._d[key]
        if isinstance(container, Mapping):
            return container[key]
        if isinstance(container, (tuple, list)) and type(key) is int:
            return container[key]
        return ctx("#indexer", runtime.engine, NO_VALUE, ctx)(container, key)

    return subscript


def _compile_map(node: ast.MapExpression, runtime: Runtime, mode: int) -> Evaluator:
    pairs: list[tuple[Evaluator, Evaluator]] = []
    for rule in node.args:
        if not isinstance(rule, ast.MappingRuleExpression):
            return _yaql_fallback(node, runtime)
        pairs.append((_compile(rule.source, runtime, mode),
                      _compile(rule.destination, runtime, mode)))

    def build(ctx: Any) -> Any:
        made = yaql_utils.FrozenDict({k(ctx): v(ctx) for k, v in pairs})
        if len(pairs) > 1 and not KEPT_TYPES.issuperset(map(type, made._d.values())):
            check_built(made)  # ``{a => $x, b => $x}`` doubles $x written out
        return made

    return build


#: the types of collections Python's ``==`` walks
_NESTED = frozenset({tuple, list, dict, FrozenDict, set, frozenset})


def _check_compared(a: Any, b: Any) -> None:
    """Refuse to compare values holding more than MAX_ITEMS items written out: Python's
    ``==`` walks each part as often as it is held, in C code no budget interrupts."""
    check_built(a)
    check_built(b)
