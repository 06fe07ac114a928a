"""Reading class files: YAML where plain scalars may be yaql expressions.

The rule Murano packages rely on: an unquoted scalar becomes an expression
only when it is not just letters, digits, ``_``, spaces and dots, and it
parses as yaql. Quoted scalars are always strings; ``!yaql`` forces an
expression. Every mapping remembers where it was written (:class:`SourceMap`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import yaml

from murano_engine.dsl.errors import LoadError, Position

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PLAIN_WORDS = re.compile(r"^[\s\w.]*$")

ExpressionFactory = Callable[[str, Position], Any]


class SourceMap(dict):
    """A mapping that knows its file position."""

    __slots__ = ("position",)

    def __init__(self, *args: Any, position: Position | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.position = position


def position_of(node: Any) -> Position | None:
    return getattr(node, "position", None)


def load_documents(text: str | bytes, filename: str,
                   make_expression: ExpressionFactory | None) -> list[Any]:
    """Parse every YAML document of a class file.

    ``make_expression(text, position)`` turns candidate scalars into
    expressions; it returns ``None`` for text that does not parse, which then
    stays a string. Without it, scalars stay strings (manifests, UI files).
    """
    loader = _make_loader(text, filename, make_expression)
    try:
        return list(loader.construct_document(node) for node in _compose_all(loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        pos = Position(filename, mark.line + 1, mark.column + 1) if mark else None
        raise LoadError(f"malformed YAML: {exc.problem or exc.context}", pos) from None
    except yaml.YAMLError as exc:
        raise LoadError(f"malformed YAML: {exc}", file=filename) from None
    finally:
        loader.dispose()


def load_plain(text: str | bytes, filename: str) -> Any:
    """Parse a single-document YAML file with no expressions (manifests, UI)."""
    docs = load_documents(text, filename, None)
    if not docs:
        return None
    if len(docs) > 1:
        raise LoadError("expected one YAML document", file=filename)
    return docs[0]


def _compose_all(loader: yaml.SafeLoader):
    while loader.check_node():
        yield loader.get_node()


class _TagAwareLoader(yaml.SafeLoader):
    """The pure-Python loader, used when a file has ``!!str`` plain scalars.

    The C loader cannot tell ``!!str $x`` from a plain ``$x``; this one marks
    scalars whose tag was written explicitly.
    """

    def compose_scalar_node(self, anchor: Any) -> yaml.ScalarNode:
        explicit = self.peek_event().tag not in (None, "!")
        node = super().compose_scalar_node(anchor)
        node.explicit_tag = explicit  # type: ignore[attr-defined]
        return node


def _make_loader(text: str | bytes, filename: str,
                 make_expression: ExpressionFactory | None) -> yaml.SafeLoader:
    needs_tags = (b"!!str" if isinstance(text, bytes) else "!!str") in text

    class Loader(_TagAwareLoader if needs_tags else _BaseLoader):  # type: ignore[misc,valid-type]
        pass

    def position(node: yaml.Node) -> Position:
        return Position(filename, node.start_mark.line + 1, node.start_mark.column + 1)

    def construct_mapping(loader: Loader, node: yaml.MappingNode) -> SourceMap:
        loader.flatten_mapping(node)
        result = SourceMap(position=position(node))
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise LoadError("a mapping key must be a scalar", position(key_node)) from None
            if key in result:
                raise LoadError(f"duplicate key {key!r}", position(key_node))
            result[key] = loader.construct_object(value_node, deep=True)
        return result

    def construct_string(loader: Loader, node: yaml.ScalarNode) -> Any:
        value = loader.construct_scalar(node)
        if (make_expression is not None and not node.style
                and not getattr(node, "explicit_tag", False)
                and not _PLAIN_WORDS.match(value)):
            expr = make_expression(value, position(node))
            if expr is not None:
                return expr
        return value

    def construct_yaql(loader: Loader, node: yaml.ScalarNode) -> Any:
        value = loader.construct_scalar(node)
        if make_expression is None:
            return value
        expr = make_expression(value, position(node))
        if expr is None:
            raise LoadError(f"not a valid yaql expression: {value!r}", position(node))
        return expr

    Loader.add_constructor("tag:yaml.org,2002:map", construct_mapping)
    Loader.add_constructor("tag:yaml.org,2002:str", construct_string)
    Loader.add_constructor("!yaql", construct_yaql)
    return Loader(text)
