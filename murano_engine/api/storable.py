"""Text the catalog's database can keep: PostgreSQL's text holds no NUL character.

What a user sends (a body, a query, a manifest) is refused where it has one
(:func:`nul_at` says where); what the engine reports (a script's output in a
status report) is kept with each NUL shown as U+FFFD (:func:`storable`), so one
such report cannot be refused over and over.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

NUL = "\x00"
SHOWN = "\ufffd"


def nul_at(value: Any, where: str = "") -> str | None:
    """Where parsed JSON or YAML ``value`` holds a NUL character, in a key or a text
    (``services[0].name``; the NUL shown as ``\\u0000``), or None."""
    return _text_at(value, where, _has_nul)


def surrogate_at(value: Any, where: str = "") -> str | None:
    """Where ``value`` holds a lone UTF-16 surrogate (JSON's ``"\\ud800"``), which no
    UTF-8 text, and so no database text, can hold; or None."""
    return _text_at(value, where, _SURROGATE.search)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_nul(text: str) -> bool:
    return NUL in text


def _text_at(value: Any, where: str, found: Callable[[str], Any]) -> str | None:
    if isinstance(value, str):
        return (where or "the text") if found(value) else None
    if isinstance(value, Mapping):
        for key, item in value.items():
            here = f"{where}.{key}" if where else str(key)
            if found(here):
                return "".join(f"\\u{ord(c):04x}" if found(c) else c for c in here)
            inner = _text_at(item, here, found)
            if inner is not None:
                return inner
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            inner = _text_at(item, f"{where}[{index}]", found)
            if inner is not None:
                return inner
    return None


def storable(text: str | None) -> str | None:
    """``text`` with each NUL character shown as U+FFFD."""
    return text.replace(NUL, SHOWN) if text and NUL in text else text
