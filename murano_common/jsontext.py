"""Measuring JSON text before decoding it.

Python's JSON decoder recurses once per nesting level, so a text of 100,000
nested ``[`` exhausts the stack; how deep a text nests is measured on the
text itself, in C-speed passes (a regular expression drops the strings,
``translate`` keeps the brackets, ``accumulate`` sums them), before it is
decoded. The engine and the agent both read JSON from people they do not trust.
"""

from __future__ import annotations

import array
import itertools
import re

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))


def nesting_depth(text: str | bytes) -> int:
    """How deep the arrays and objects of a JSON text nest (brackets in strings skipped)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    brackets = _STRING.sub(b"", data).translate(_STEPS, _NOT_BRACKETS)
    return max(itertools.accumulate(array.array("b", brackets)), default=0)
