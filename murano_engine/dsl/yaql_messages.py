"""yaql's errors about a method's receiver quote at most :data:`MAX_QUOTED` characters of it.

yaql writes the whole receiver into the message (``No method "x" for receiver ...``):
for a big value, megabytes of text, and for one holding a part in many places (a list
of two references to a list of two ...) more than memory holds, built in C code no
budget interrupts. Importing this module gives those errors a bounded quote instead;
the classes, their names and the rest of their words stay yaql's.
"""

from __future__ import annotations

from yaql.language import exceptions

from murano_engine.dsl.values import is_mapping, items_of

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

#: the most characters of a value an error message quotes
MAX_QUOTED = 300
_SEQUENCES = (tuple, list, set, frozenset)


def quoted(value: Any) -> str:
    """``str(value)`` as yaql quotes it, cut at MAX_QUOTED characters (``...`` then),
    never writing out more than that of it."""
    if not isinstance(value, _SEQUENCES) and not is_mapping(value):
        text = str(value)
        return text if len(text) <= MAX_QUOTED else text[:MAX_QUOTED] + "..."
    parts: list[str] = []
    left = [MAX_QUOTED]

    def write(text: str) -> None:
        parts.append(text[:max(left[0], 0)])
        left[0] -= len(text)

    def walk(item: Any) -> None:
        if left[0] <= 0:
            return
        if is_mapping(item):
            write("{")
            for index, (key, inner) in enumerate(items_of(item)):
                if left[0] <= 0:
                    break
                write(", " if index else "")
                walk(key)
                write(": ")
                walk(inner)
            write("}")
        elif isinstance(item, _SEQUENCES):
            write("[" if isinstance(item, list) else "(")
            for index, inner in enumerate(item):
                if left[0] <= 0:
                    break
                write(", " if index else "")
                walk(inner)
            write("]" if isinstance(item, list) else ")")
        else:
            write(repr(item) if isinstance(item, str) else str(item))

    walk(value)
    return "".join(parts) + ("..." if left[0] < 0 else "")


def _bounded(template: str) -> Any:
    def __init__(self: Exception, name: str, receiver: Any) -> None:
        Exception.__init__(self, template.format(name, quoted(receiver)))
    return __init__


exceptions.NoMethodRegisteredException.__init__ = _bounded(  # type: ignore[method-assign]
    'Unknown method "{}" for receiver {}')
exceptions.NoMatchingMethodException.__init__ = _bounded(  # type: ignore[method-assign]
    'No method "{}" for receiver {} matches supplied arguments')
exceptions.AmbiguousMethodException.__init__ = _bounded(  # type: ignore[method-assign]
    'Ambiguous method "{}" for receiver {}')
