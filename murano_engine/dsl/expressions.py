"""yaql with Murano's additions: the parser, contexts and compiled expressions.

Murano's operators are ``is`` (instance-of, at the precedence of ``>``),
binary ``ns:Name`` and prefix ``:Name`` (type references). Expressions are
parsed once when a class file is read and compiled to closures on first use.
"""

from __future__ import annotations

import _pickle  # the C pickler (pickle.py, its Python fallback, costs start-up time)
import functools

from murano_engine.dsl.document_cache import PICKLE_PROTOCOL
from murano_engine.dsl.errors import LoadError, Position
from murano_engine.dsl.limits import ITERATOR_LIMIT, MEMORY_QUOTA

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

    from murano_engine.dsl import compiler

# yaql and the compiler are imported when first needed (a parse, an evaluation, a tree
# read back): loading classes from the document cache, which reads their declarations
# only, imports neither.

#: the yaql engine's options: the same for every format
ENGINE_OPTIONS = {
    "yaql.limitIterators": ITERATOR_LIMIT,
    "yaql.memoryQuota": MEMORY_QUOTA,
    "yaql.convertInputData": False,
    "yaql.convertOutputData": False,
}


@functools.cache
def engine() -> Any:
    """The yaql engine (parser plus options) shared by every format."""
    from murano_engine.dsl.grammar import murano_factory
    from murano_engine.dsl.parser_cache import create_engine
    return create_engine(murano_factory(), ENGINE_OPTIONS)


class CallEngine:
    """The engine yaql's functions are called with. They read its ``options`` only, so
    the parser behind it (lexer rules and LALR tables, ~33M instructions to make) is
    made on the first parse or other use: a warm start runs syntax trees read back
    from the document cache and may never parse."""

    __slots__ = ("options",)

    def __init__(self) -> None:
        from yaql.language.utils import FrozenDict
        self.options = FrozenDict(ENGINE_OPTIONS)

    def __call__(self, expression: str, options: Any = None) -> Any:
        return engine()(expression, options)

    def __getattr__(self, name: str) -> Any:  # lexer, parser, factory, copy
        return getattr(engine(), name)


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> Any:
    """yaql's syntax tree of ``text``, parsed once a process: a tree is only read (compiled
    to closures, walked), so expressions of the same text (``$``, ``$.string()``, a
    test's ``new(...)`` line repeated in its siblings) share it."""
    return engine()(text)


class Expression:
    """A yaql expression written in a class file.

    One read back from the document cache (:mod:`murano_engine.dsl.document_cache`)
    comes with its syntax tree, pickled apart (``tree``): unpickled on first use, so
    reading a class file back costs no more for the expressions it never runs.
    """

    __slots__ = ("source", "position", "_node", "_tree", "_fn", "_contract_fn")

    def __init__(self, source: str, position: Position | None, node: Any,
                 tree: bytes | None = None) -> None:
        self.source = source
        self.position = position
        self._node = node
        self._tree = tree
        self._fn: compiler.Evaluator | None = None
        self._contract_fn: compiler.Evaluator | None = None

    @property
    def node(self) -> Any:
        """yaql's syntax tree of the expression."""
        node = self._node
        if node is None:
            if self._tree is not None:
                node = _read_back_statement()(_pickle.loads(self._tree))
                self._tree = None
            else:
                node = _parsed(self.source)
            self._node = node
        return node

    def __reduce__(self) -> tuple[Any, tuple[str, Position | None, None, bytes | None]]:
        # Kept with its tree, less the root that holds yaql's engine (the parser): read
        # back, it needs no parser.
        from yaql.language import expressions as yaql_expressions
        node, tree = self._node, self._tree
        if isinstance(node, yaql_expressions.Statement):
            tree = _pickle.dumps(node.expression, protocol=PICKLE_PROTOCOL)
        return Expression, (self.source, self.position, None, tree)

    def evaluate(self, ctx: Any) -> Any:
        fn = self._fn
        if fn is None:
            from murano_engine.dsl import compiler
            from murano_engine.dsl.contexts import runtime_of
            fn = self._fn = compiler.compile_expression(self.node, runtime_of(ctx))
        return fn(ctx)

    def compiled(self) -> compiler.Evaluator | None:
        """The compiled code :meth:`evaluate` runs (None before its first evaluation)."""
        return self._fn

    def evaluate_contract(self, ctx: Any) -> Any:
        """Evaluate as a contract: ``$.string()``, ``$.class(T)`` ... are checks."""
        fn = self._contract_fn
        if fn is None:
            from murano_engine.dsl import compiler
            from murano_engine.dsl.contexts import runtime_of
            fn = self._contract_fn = compiler.compile_expression(
                self.node, runtime_of(ctx), compiler.CONTRACT)
        return fn(ctx)

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"

    def __str__(self) -> str:
        return self.source


@functools.cache
def _read_back_statement() -> type:
    """The root of a tree read back from the document cache: its engine, which only
    yaql's own ``evaluate`` asks for, is made when asked for."""
    from yaql.language import expressions as yaql_expressions

    class ReadBackStatement(yaql_expressions.Statement):
        __doc__ = _read_back_statement.__doc__

        def __init__(self, expression: Any) -> None:
            super().__init__(expression, None)

        engine = property(lambda self: engine(), lambda self, value: None)

    return ReadBackStatement


#: the deepest an expression's syntax tree may nest: compiling it recurses per level
MAX_EXPRESSION_DEPTH = 200


def parse(text: str, position: Position | None = None) -> Expression:
    """Parse ``text`` as yaql; a syntax error names the position."""
    from yaql.language import exceptions as yaql_exceptions
    try:
        node = _parsed(text)
    except (yaql_exceptions.YaqlException, KeyError, IndexError) as exc:
        raise LoadError(f"invalid expression {text!r}: {exc}", position) from None
    return Expression(text, position, _shallow(node, text, position))


def _shallow(node: Any, text: str, position: Position | None) -> Any:
    """``node``, checked to nest no deeper than MAX_EXPRESSION_DEPTH (an iterative walk)."""
    from yaql.language import expressions as yaql_expressions
    pending = [(node, 1)]
    while pending:
        current, depth = pending.pop()
        if depth > MAX_EXPRESSION_DEPTH:
            shown = text if len(text) <= 60 else text[:57] + "..."
            raise LoadError(f"expression {shown!r} nests deeper than "
                            f"{MAX_EXPRESSION_DEPTH} levels", position)
        children = getattr(current, "args", ())
        for name in ("expression", "expr", "source", "destination"):
            child = getattr(current, name, None)
            if child is not None:
                children = (*children, child)
        pending.extend((child, depth + 1) for child in children
                       if isinstance(child, yaql_expressions.Expression))
    return node


def try_parse(text: str, position: Position) -> Expression | None:
    """An expression for ``text``, or ``None`` when it is not valid yaql."""
    from yaql.language import exceptions as yaql_exceptions
    try:
        node = _parsed(text)
    except (yaql_exceptions.YaqlException, KeyError, IndexError):
        return None
    return Expression(text, position, _shallow(node, text, position))
