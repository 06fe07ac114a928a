"""String functions: ``format``, ``base64encode``/``base64decode``, ``substr``."""

from __future__ import annotations

import base64
import re
import string
from typing import Any

from murano_engine.dsl.budget import check_width
from murano_engine.dsl.runtime import FunctionSpec


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
        text = super().format_field(value, format_spec)
        self.produced += len(text)
        check_width(self.produced)
        return text


# Width and precision are the only digit runs of a format spec that can be large.
_NUMBERS = re.compile(r"\d+")


def format_(ctx: Any, template: Any, *args: Any, **kwargs: Any) -> str:
    return SafeFormatter().vformat(str(template), args, kwargs)


def base64encode(ctx: Any, value: Any) -> str:
    data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    return base64.b64encode(data).decode("ascii")


def base64decode(ctx: Any, value: Any) -> str:
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
