"""Plain data: the dicts, lists and scalars that JSON and YAML give."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

_ATOMS = frozenset({str, int, float, bool, type(None)})


def copy_tree(value: Any) -> Any:
    """A deep copy of plain data, several times faster than ``copy.deepcopy``; anything
    but dicts, lists and scalars inside it goes to ``copy.deepcopy``."""
    kind = type(value)
    atoms = _ATOMS
    if kind is dict:
        return {key: item if type(item) in atoms else copy_tree(item)
                for key, item in value.items()}
    if kind is list:
        return [item if type(item) in atoms else copy_tree(item) for item in value]
    if kind in atoms:
        return value
    import copy  # here: most runs never need it (it imports weakref)
    return copy.deepcopy(value)
