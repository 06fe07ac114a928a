"""Decoding agent result messages (v1 and v2) into a value or an AgentError."""

from __future__ import annotations

from typing import Any

from murano_engine.messaging.errors import AgentError


def _v1_exception(result: Any, source: str) -> AgentError:
    if isinstance(result, list):
        fields = [*result[:4], None, None, None, None][:4]
        kind, message, command, details = fields
    else:
        kind, message, command, details = None, result, None, None
    return AgentError(
        {
            "type": kind,
            "message": message,
            "command": command,
            "details": details,
            "timestamp": None,
            "source": source,
        }
    )


def _decode_v1(message: dict[str, Any]) -> Any:
    result = message.get("Result")
    if message.get("IsException"):
        raise _v1_exception(result, "execution_plan")
    if not isinstance(result, list) or not result:
        return None
    last = result[-1]
    if not isinstance(last, dict):
        return last
    if last.get("IsException"):
        raise _v1_exception(last.get("Result"), "command")
    return last.get("Result")


def _decode_v2(message: dict[str, Any]) -> Any:
    body = message.get("Body")
    code = message.get("ErrorCode", 0)
    if not code:
        return body
    body = dict(body) if isinstance(body, dict) else {"Message": body}
    text = body.pop("Message", None)
    details = body.pop("AdditionalInfo", None)
    raise AgentError(
        {
            "message": text,
            "details": details,
            "errorCode": code,
            "time": message.get("Time"),
            "extra": body or None,
        }
    )


def decode_result(message: dict[str, Any]) -> Any:
    """The value a plan returned; raises AgentError for an error result."""
    if "IsException" in message and "FormatVersion" not in message:
        return _decode_v1(message)
    return _decode_v2(message)
