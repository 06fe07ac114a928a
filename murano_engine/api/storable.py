"""Text the catalog's database can keep: PostgreSQL's text holds no NUL character.

What a user sends (a body, a query, a manifest) is refused where it has one
(:func:`nul_at` says where); what the engine reports (a script's output in a
status report) is kept with each NUL shown as U+FFFD (:func:`storable`), so one
such report cannot be refused over and over.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NUL = "\x00"
SHOWN = "\ufffd"


def nul_at(value: Any, where: str = "") -> str | None:
    """Where parsed JSON or YAML ``value`` holds a NUL character, in a key or a text
    (``services[0].name``; the NUL shown as ``\\u0000``), or None."""
    if isinstance(value, str):
        return (where or "the text") if NUL in value else None
    if isinstance(value, Mapping):
        for key, item in value.items():
            here = f"{where}.{key}" if where else str(key)
            if NUL in here:
                return here.replace(NUL, "\\u0000")
            found = nul_at(item, here)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = nul_at(item, f"{where}[{index}]")
            if found is not None:
                return found
    return None


def storable(text: str | None) -> str | None:
    """``text`` with each NUL character shown as U+FFFD."""
    return text.replace(NUL, SHOWN) if text and NUL in text else text
