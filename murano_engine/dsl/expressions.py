"""yaql with Murano's additions: the parser, contexts and compiled expressions.

Murano's operators are ``is`` (instance-of, at the precedence of ``>``),
binary ``ns:Name`` and prefix ``:Name`` (type references). Expressions are
parsed once when a class file is read and compiled to closures on first use.
"""

from __future__ import annotations

import functools
from typing import Any

from yaql.language import exceptions as yaql_exceptions
from yaql.language import expressions as yaql_expressions

from murano_engine.dsl import compiler, values
from murano_engine.dsl.contexts import runtime_of
from murano_engine.dsl.errors import LoadError, Position


@functools.cache
def engine() -> Any:
    """The yaql engine (parser plus options) shared by every format."""
    from murano_engine.dsl.grammar import murano_factory
    from murano_engine.dsl.parser_cache import create_engine
    return create_engine(murano_factory(), {
        "yaql.limitIterators": values.ITERATOR_LIMIT,
        "yaql.memoryQuota": values.MEMORY_QUOTA,
        "yaql.convertInputData": False,
        "yaql.convertOutputData": False,
    })


class Expression:
    """A yaql expression written in a class file.

    One read back from the document cache (:mod:`murano_engine.dsl.document_cache`)
    parsed when it was first read; its syntax tree is made again on first use.
    """

    __slots__ = ("source", "position", "_node", "_fn", "_contract_fn")

    def __init__(self, source: str, position: Position | None, node: Any) -> None:
        self.source = source
        self.position = position
        self._node = node
        self._fn: compiler.Evaluator | None = None
        self._contract_fn: compiler.Evaluator | None = None

    @property
    def node(self) -> Any:
        """yaql's syntax tree of the expression."""
        node = self._node
        if node is None:
            node = self._node = engine()(self.source)
        return node

    def __reduce__(self) -> tuple[Any, tuple[str, Position | None, None]]:
        # Kept as its text: the tree is yaql's (it holds the parser), made again on use.
        return Expression, (self.source, self.position, None)

    def evaluate(self, ctx: Any) -> Any:
        fn = self._fn
        if fn is None:
            fn = self._fn = compiler.compile_expression(self.node, runtime_of(ctx))
        return fn(ctx)

    def compiled(self) -> compiler.Evaluator | None:
        """The compiled code :meth:`evaluate` runs (None before its first evaluation)."""
        return self._fn

    def evaluate_contract(self, ctx: Any) -> Any:
        """Evaluate as a contract: ``$.string()``, ``$.class(T)`` ... are checks."""
        fn = self._contract_fn
        if fn is None:
            fn = self._contract_fn = compiler.compile_expression(
                self.node, runtime_of(ctx), compiler.CONTRACT)
        return fn(ctx)

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"

    def __str__(self) -> str:
        return self.source


#: the deepest an expression's syntax tree may nest: compiling it recurses per level
MAX_EXPRESSION_DEPTH = 200


def parse(text: str, position: Position | None = None) -> Expression:
    """Parse ``text`` as yaql; a syntax error names the position."""
    try:
        node = engine()(text)
    except (yaql_exceptions.YaqlException, KeyError, IndexError) as exc:
        raise LoadError(f"invalid expression {text!r}: {exc}", position) from None
    return Expression(text, position, _shallow(node, text, position))


def _shallow(node: Any, text: str, position: Position | None) -> Any:
    """``node``, checked to nest no deeper than MAX_EXPRESSION_DEPTH (an iterative walk)."""
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
    try:
        node = engine()(text)
    except (yaql_exceptions.YaqlException, KeyError, IndexError):
        return None
    return Expression(text, position, _shallow(node, text, position))
