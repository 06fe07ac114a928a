"""Status reports: the messages a deployment sends its user as it goes.

Beside them travel *steps* (reports with a ``step`` key and level ``step``): an
execution plan sent to a server and answered, a stack pushed. They carry what
the deployment picture (:mod:`murano_engine.web.picture`) draws; the report
lists people read leave them out (:func:`is_step`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from murano_engine.dsl import boundary

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    Reporter = Callable[[dict[str, Any]], None]


def report(reporter: Reporter | None, environment_id: str | None, entity_id: str | None,
           text: str, level: str = "info", details: str | None = None,
           event: str | None = None) -> None:
    """Send one status report (the shape Murano's API stores).

    ``event`` names a milestone progress displays count, such as
    ``application-deployed``.
    """
    if reporter is None:
        return
    entry = {"id": entity_id or environment_id, "environment_id": environment_id,
             "text": text, "details": details, "level": level,
             "timestamp": boundary.outside().now()}
    if event:
        entry["event"] = event
    reporter(entry)


def is_step(entry: Any) -> bool:
    """Whether a report is a step of the deployment picture, not a message."""
    return isinstance(entry, dict) and isinstance(entry.get("step"), dict)


def step(reporter: Reporter | None, environment_id: str | None, **fields: Any) -> None:
    """Send one step (``kind`` plan or stack, ``phase`` sent/answered/pushed, ``lane``,
    ``name``, ``key`` joining a plan's two phases, ...) stamped with the time."""
    if reporter is None:
        return
    reporter({"id": environment_id, "environment_id": environment_id, "text": "",
              "details": None, "level": "step", "timestamp": boundary.outside().now(),
              "step": fields})


def digests(value: Any) -> list[str]:
    """Short digests of the distinctive scalars in ``value`` (strings of 4 characters or
    more): a step whose inputs share one with an earlier step's outputs got data from it."""
    from hashlib import sha256  # here: loading the Agent class should not import hashlib
    found = sorted({sha256(item.encode()).hexdigest()[:10] for item in _scalars(value)
                    if len(item) >= 4 and item.lower() not in ("true", "false", "none",
                                                               "null")})
    return found[:50]


def _scalars(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _scalars(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _scalars(item)
    elif isinstance(value, str):
        yield value.strip()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield str(value)
