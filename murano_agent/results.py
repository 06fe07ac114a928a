"""Result messages the agent sends back, in the shapes Murano's engine decodes."""

from __future__ import annotations

import datetime
import uuid
from typing import Any


def _now() -> str:
    return datetime.datetime.now().isoformat(" ")


def v2_success(plan_id: str, body: Any) -> dict[str, Any]:
    """A v2 result: ``ErrorCode`` 0 and whatever the plan's Body returned."""
    return {
        "FormatVersion": "2.0.0",
        "ID": uuid.uuid4().hex,
        "SourceID": plan_id,
        "Action": "Execution:Result",
        "ErrorCode": 0,
        "Body": body,
        "Time": _now(),
    }


def v2_failure(plan_id: str, code: int, message: str, info: Any = None) -> dict[str, Any]:
    """A v2 error result: ``Body`` is ``{Message, AdditionalInfo}``."""
    result = v2_success(plan_id, {"Message": message, "AdditionalInfo": info})
    result["ErrorCode"] = code
    return result


def v1_success(command_results: list[dict[str, Any]]) -> dict[str, Any]:
    """A v1 result: one ``{IsException, Result}`` entry per command run."""
    return {"IsException": False, "Result": command_results}


def v1_failure(kind: str, message: str, details: Any = None) -> dict[str, Any]:
    """A v1 plan-level failure; ``Result`` is ``[type, message, command, details]``."""
    return {"IsException": True, "Result": [kind, message, None, details]}
