"""Murano's object-model paths: ``/<id or index or key>/...`` into lists and mappings.

In a list a segment is an object id (matched against ``?.id``) or an index.
The editing helpers return a changed copy and never touch their input.
"""

from __future__ import annotations

import copy
from typing import Any

from murano_engine.api.errors import BadRequest, NotFound


def _segments(path: str) -> list[str]:
    return [s for s in path.split("/") if s]


def _child_key(container: Any, segment: str, path: str) -> Any:
    if isinstance(container, list):
        for index, item in enumerate(container):
            if isinstance(item, dict) and isinstance(item.get("?"), dict) \
                    and item["?"].get("id") == segment:
                return index
        if segment.lstrip("-").isdigit() and -len(container) <= int(segment) < len(container):
            return int(segment)
    elif isinstance(container, dict) and segment in container:
        return segment
    raise NotFound(f"nothing at {path!r} in the model")


def resolve(root: Any, path: str) -> Any:
    value = root
    for segment in _segments(path):
        value = value[_child_key(value, segment, path)]
    return value


def _parent(root: Any, path: str) -> tuple[Any, Any, Any]:
    segments = _segments(path)
    if not segments:
        raise BadRequest("the path must name a part of the model")
    copied = copy.deepcopy(root)
    parent = resolve(copied, "/".join(segments[:-1]))
    return copied, parent, _child_key(parent, segments[-1], path)


def replace_at(root: Any, path: str, value: Any) -> Any:
    copied, parent, key = _parent(root, path)
    parent[key] = value
    return copied


def remove_at(root: Any, path: str) -> Any:
    copied, parent, key = _parent(root, path)
    del parent[key]
    return copied


def insert_at(root: Any, path: str, value: Any) -> Any:
    """Append ``value`` to the list at ``path``."""
    copied = copy.deepcopy(root)
    target = resolve(copied, path)
    if not isinstance(target, list):
        raise BadRequest(f"{path!r} is not a list; use PUT to replace it")
    target.append(value)
    return copied
