"""Status reports: the messages a deployment sends its user as it goes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from murano_engine import boundary

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
