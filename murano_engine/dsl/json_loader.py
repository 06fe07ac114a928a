"""Reading JSON from files people outside the operator's control write.

Python's JSON decoder recurses once per level of nesting, so a document of
20,000 nested ``[`` can crash the process; the nesting is measured on the
text before it is decoded (:func:`murano_common.jsontext.nesting_depth`).
"""

from __future__ import annotations

import json

from murano_common.jsontext import nesting_depth
from murano_engine.dsl.errors import LoadError, Position
from murano_engine.dsl.yaml_loader import MAX_BYTES, MAX_DEPTH

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


def load_json(text: str | bytes, filename: str) -> Any:
    """Decode a JSON file; a malformed, too large or too deep one is a LoadError."""
    if len(text) > MAX_BYTES:
        raise LoadError(f"file is larger than {MAX_BYTES} bytes", file=filename)
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LoadError(f"malformed JSON: not UTF-8 ({exc.reason} at byte {exc.start})",
                        file=filename) from None
    if nesting_depth(text) > MAX_DEPTH:
        raise LoadError(f"JSON nested deeper than {MAX_DEPTH} levels", file=filename)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise LoadError(f"malformed JSON: {exc.msg}",
                        Position((filename, exc.lineno, exc.colno))) from None
