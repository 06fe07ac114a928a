"""Reading class files: YAML where plain scalars may be yaql expressions.

The rule Murano packages rely on: an unquoted scalar becomes an expression
only when it is not just letters, digits, ``_``, spaces and dots, and it
parses as yaql. Quoted scalars are always strings; ``!yaql`` forces an
expression. Every mapping remembers where it was written (:class:`SourceMap`).

Files come from people the operator does not control, so every file is read
with libyaml (whatever tags it uses) and first checked on its event stream:
its size, how deep it nests and how many nodes its aliases expand to.

PyYAML is imported on the first file read (through :mod:`murano_common.pyyaml`): a
start-up that finds every file in the document cache does without it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from murano_common.pyyaml import import_yaml
from murano_engine.dsl.errors import LoadError, Position

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

    import yaml

    ExpressionFactory = Callable[[str, Position], Any]

#: the largest YAML or JSON file read, in bytes
MAX_BYTES = 16 * 1024 * 1024
#: the deepest nesting of lists and mappings in a YAML or JSON file
MAX_DEPTH = 200
#: the most nodes a YAML file may hold once its aliases are expanded
MAX_NODES = 1_000_000
_PLAIN_WORDS = re.compile(r"^[\s\w.]*$")


class SourceMap(dict):
    """A mapping that knows its file position."""

    __slots__ = ("position",)

    def __init__(self, *args: Any, position: Position | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.position = position


def position_of(node: Any) -> Position | None:
    return getattr(node, "position", None)


@functools.cache
def _base_loader() -> type:
    """libyaml's safe loader, or PyYAML's own where libyaml is missing."""
    yaml = import_yaml()
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_documents(text: str | bytes, filename: str,
                   make_expression: ExpressionFactory | None) -> list[Any]:
    """Parse every YAML document of a class file.

    ``make_expression(text, position)`` turns candidate scalars into
    expressions; it returns ``None`` for text that does not parse, which then
    stays a string. Without it, scalars stay strings (manifests, UI files).
    """
    yaml = import_yaml()
    if len(text) > MAX_BYTES:
        raise LoadError(f"file is larger than {MAX_BYTES} bytes", file=filename)
    try:
        explicit = check_events(text, filename)
        loader = _make_loader(text, filename, make_expression, explicit)
        try:
            return list(loader.construct_document(node) for node in _compose_all(loader))
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        pos = Position((filename, mark.line + 1, mark.column + 1)) if mark else None
        raise LoadError(f"malformed YAML: {exc.problem or exc.context}", pos) from None
    except yaml.reader.ReaderError as exc:
        before = text[:exc.position]
        newline = b"\n" if isinstance(before, bytes) else "\n"
        pos = Position((filename, before.count(newline) + 1,
                        exc.position - before.rfind(newline)))
        raise LoadError(f"malformed YAML: {exc.reason} (character {exc.character!r})",
                        pos) from None
    except yaml.YAMLError as exc:
        raise LoadError(f"malformed YAML: {str(exc).splitlines()[0]}", file=filename) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise LoadError(f"malformed YAML: {exc}", file=filename) from None


def check_events(text: str | bytes, filename: str) -> set[tuple[int, int]]:
    """Refuse a YAML stream nested deeper than MAX_DEPTH or expanding past MAX_NODES.

    Reads the stream's events only (libyaml, no nodes built), so a bomb is
    refused before it costs memory. Returns the (line, column) of every
    scalar with an explicit tag (``!!str $x`` is a string, not an expression).
    """
    yaml = import_yaml()
    try:
        return _check_events(yaml.parse(text, Loader=_base_loader()), filename)
    except yaml.MarkedYAMLError as exc:
        # Newer libyaml refuses nesting past 1,000 levels while reading ahead, before the
        # events reach the 201st: Python's parser, which does not read ahead, finds it.
        if "nesting depth" in str(exc.problem) and _base_loader() is not yaml.SafeLoader:
            return _check_events(yaml.parse(text, Loader=yaml.SafeLoader), filename)
        raise


def _check_events(events: Any, filename: str) -> set[tuple[int, int]]:
    yaml = import_yaml()
    explicit: set[tuple[int, int]] = set()
    sizes: dict[str, int] = {}
    open_collections: list[tuple[str | None, int]] = []
    total = 0
    for event in events:
        kind = type(event)
        if kind is yaml.ScalarEvent:
            total += 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
            if event.tag not in (None, "!"):
                explicit.add((event.start_mark.line, event.start_mark.column))
        elif kind is yaml.AliasEvent:
            if any(anchor == event.anchor for anchor, _ in open_collections):
                raise LoadError(f"alias *{event.anchor} refers to a collection holding it",
                                _position(filename, event.start_mark))
            total += sizes.get(event.anchor, 1)
            if total > MAX_NODES:
                raise LoadError(f"YAML aliases expand to more than {MAX_NODES} nodes",
                                _position(filename, event.start_mark))
        elif kind is yaml.SequenceStartEvent or kind is yaml.MappingStartEvent:
            total += 1
            open_collections.append((event.anchor, total))
            if len(open_collections) > MAX_DEPTH:
                raise LoadError(f"YAML nested deeper than {MAX_DEPTH} levels",
                                _position(filename, event.start_mark))
        elif kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
            anchor, start = open_collections.pop()
            if anchor is not None:
                sizes[anchor] = total - start + 1
        elif kind is yaml.DocumentStartEvent:
            sizes.clear()
        if total > MAX_NODES:
            raise LoadError(f"YAML holds more than {MAX_NODES} nodes",
                            _position(filename, event.start_mark))
    return explicit


def _position(filename: str, mark: Any) -> Position:
    return Position((filename, mark.line + 1, mark.column + 1))


def load_plain(text: str | bytes, filename: str) -> Any:
    """Parse a single-document YAML file with no expressions (manifests, UI)."""
    docs = load_documents(text, filename, None)
    if not docs:
        return None
    if len(docs) > 1:
        raise LoadError("expected one YAML document", file=filename)
    return docs[0]


def field_position(text: str | bytes, filename: str, field: tuple[Any, ...],
                   document: Position | None = None) -> Position | None:
    """Where the value at ``field`` (mapping keys and list indexes, from the root) was
    written in the document starting at ``document`` (the first one without it), or
    ``None``. Mappings carry their positions, plain scalars do not: an error about a
    scalar (``Extends: NoSuch``) finds its line here, reading the file again."""
    yaml = import_yaml()
    loader = _base_loader()(text)
    try:
        for root in _compose_all(loader):
            if document is None or (root.start_mark.line + 1,
                                    root.start_mark.column + 1) == document[1:]:
                return _walk(root, field, filename)
    except yaml.YAMLError:
        pass
    finally:
        loader.dispose()
    return None


def _walk(node: Any, field: tuple[Any, ...], filename: str) -> Position | None:
    yaml = import_yaml()
    for step in field:
        if isinstance(node, yaml.MappingNode):
            node = next((value for key, value in node.value
                         if isinstance(key, yaml.ScalarNode) and key.value == str(step)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) \
                and 0 <= step < len(node.value):
            node = node.value[step]
        else:
            return None
        if node is None:
            return None
    return _position(filename, node.start_mark)


def _compose_all(loader: yaml.SafeLoader):
    while loader.check_node():
        yield loader.get_node()


def _make_loader(text: str | bytes, filename: str,
                 make_expression: ExpressionFactory | None,
                 explicit: set[tuple[int, int]]) -> yaml.SafeLoader:
    class Loader(_base_loader()):  # type: ignore[misc]
        pass

    def position(node: yaml.Node) -> Position:
        return _position(filename, node.start_mark)

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
                and (node.start_mark.line, node.start_mark.column) not in explicit
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
