"""Result messages the agent sends back, in murano-agent's shapes (which Murano's engine
decodes): ``Time`` in UTC, ``ReplyTo`` on a run plan's result when results go to the
configured queue.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any


def utc_time() -> str:
    """Now in UTC as murano-agent writes it: ``2024-05-01 08:27:03.123456`` (no zone)."""
    return str(datetime.datetime.now(datetime.UTC).replace(tzinfo=None))


def v2_success(plan_id: str, body: Any) -> dict[str, Any]:
    """A v2 result: ``ErrorCode`` 0 and whatever the plan's Body returned."""
    return {
        "FormatVersion": "2.0.0",
        "ID": uuid.uuid4().hex,
        "SourceID": plan_id,
        "Action": "Execution:Result",
        "ErrorCode": 0,
        "Body": body,
        "Time": utc_time(),
    }


def v2_failure(plan_id: str, code: int, message: str, info: Any = None) -> dict[str, Any]:
    """A v2 error result: ``Body`` is ``{Message, AdditionalInfo}``."""
    result = v2_success(plan_id, {"Message": message, "AdditionalInfo": info})
    result["ErrorCode"] = code
    return result


def with_reply_to(result: dict[str, Any], reply_to: str | None) -> dict[str, Any]:
    """The v2 result of a plan that ran (valid, so run), as murano-agent sends it when
    results go to the configured queue: with the plan's ``ReplyTo``, null when it had none.
    """
    return {**result, "ReplyTo": reply_to}


def v1_success(command_results: list[dict[str, Any]]) -> dict[str, Any]:
    """A v1 result: one ``{IsException, Result}`` entry per command run."""
    return {"IsException": False, "Result": command_results}


def v1_failure(kind: str, message: str, details: Any = None) -> dict[str, Any]:
    """A v1 plan-level failure; ``Result`` is ``[type, message, command, details]``."""
    return {"IsException": True, "Result": [kind, message, None, details]}
