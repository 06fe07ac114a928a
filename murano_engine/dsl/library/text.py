"""String functions: ``format``, ``base64encode``/``base64decode``, ``substr``."""

from __future__ import annotations

import functools
import re
import string

from murano_engine.dsl.budget import check_width
from murano_engine.dsl.runtime import FunctionSpec
from murano_engine.dsl.values import check_built

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


class SafeFormatter(string.Formatter):
    """``str.format`` without attribute or index access into the arguments, and with
    its output bounded by the memory quota (widths and precisions are checked first)."""

    def __init__(self) -> None:
        self.produced = 0

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        if "." in field_name or "[" in field_name:
            raise ValueError(f"format field {field_name!r} may not use '.' or '['")
        return super().get_field(field_name, args, kwargs)

    def format_field(self, value: Any, format_spec: str) -> str:
        if isinstance(value, bool) and not format_spec:
            return "true" if value else "false"
        if value is None and not format_spec:
            return "null"
        if format_spec:
            for number in _NUMBERS.findall(format_spec):
                check_width(self.produced + int(number))
        check_built(value)
        text = super().format_field(value, format_spec)
        self.produced += len(text)
        check_width(self.produced)
        return text


# Width and precision are the only digit runs of a format spec that can be large.
_NUMBERS = re.compile(r"\d+")


def format_(ctx: Any, template: Any, *args: Any, **kwargs: Any) -> str:
    text = str(template)
    plan = _bare_fields(text)
    if plan is not None:
        done = _format_bare(plan, args, kwargs)
        if done is not None:
            return done
    return SafeFormatter().vformat(text, args, kwargs)


_PLAIN = frozenset({str, int, float})


@functools.lru_cache(maxsize=1024)
def _bare_fields(template: str) -> tuple[tuple[str, int | str | None], ...] | None:
    """The template as (literal, field) pieces when every field is bare - ``{}``,
    ``{0}`` or ``{name}``, no conversion, no spec - else None."""
    try:
        pieces = list(string.Formatter().parse(template))
    except ValueError:
        return None
    out: list[tuple[str, int | str | None]] = []
    automatic = manual = 0
    for literal, field, spec, conversion in pieces:
        key: int | str | None = None
        if field is not None:
            if spec or conversion:
                return None
            if field == "":
                key = automatic
                automatic += 1
            elif field.isdecimal():
                key = int(field)
                manual += 1
            elif field.isidentifier():
                key = field
            else:
                return None
        out.append((literal, key))
    return None if automatic and manual else tuple(out)


def _format_bare(plan: tuple, args: tuple, kwargs: dict) -> str | None:
    """What :class:`SafeFormatter` makes of a template of bare fields, for text and
    numbers (None for other values or a missing argument: the formatter says why)."""
    parts = []
    produced = 0
    for literal, key in plan:
        parts.append(literal)
        if key is None:
            continue
        try:
            value = args[key] if type(key) is int else kwargs[key]
        except (IndexError, KeyError):
            return None
        if type(value) not in _PLAIN:
            return None
        text = value if type(value) is str else format(value)
        produced += len(text)
        check_width(produced)
        parts.append(text)
    return "".join(parts)


def base64encode(ctx: Any, value: Any) -> str:
    data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    import base64  # here: few runs encode
    return base64.b64encode(data).decode("ascii")


def base64decode(ctx: Any, value: Any) -> str:
    import base64
    return base64.b64decode(value).decode("utf-8")


def substr(ctx: Any, text: str, start: int, length: int = -1) -> str:
    """Formats 1.0 and 1.1."""
    return text[start:] if length < 0 else text[start:start + length]


FUNCTIONS = {
    "format": FunctionSpec(format_),
    "base64encode": FunctionSpec(base64encode),
    "base64decode": FunctionSpec(base64decode),
    "substr": FunctionSpec(substr),
}
