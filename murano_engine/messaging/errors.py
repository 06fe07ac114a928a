"""Exceptions the engine raises for agent answers and silences."""

from __future__ import annotations

from typing import Any


class AgentError(Exception):
    """The agent answered with an error (Murano's ``AgentException``).

    ``info`` holds what the agent reported: for v2 plans ``message``, ``details``
    (the script's ``{exitCode, stdout, stderr}`` for a failed script),
    ``errorCode``, ``time``, ``extra``; for v1 plans ``type``, ``message``,
    ``command``, ``details``, ``timestamp``, ``source``.
    """

    def __init__(self, info: dict[str, Any]) -> None:
        self.info = info
        super().__init__(str(info.get("message") or info))

    @property
    def message(self) -> str:
        return str(self.info.get("message") or "")

    @property
    def details(self) -> Any:
        return self.info.get("details")

    @property
    def error_code(self) -> int | None:
        return self.info.get("errorCode")


class AgentTimeout(AgentError, TimeoutError):
    """No answer within the timeout (Murano's ``TimeoutException``)."""

    def __init__(self, queue: str, timeout: float, reason: str = "") -> None:
        details: dict[str, Any] = {"queue": queue, "timeout": timeout}
        if reason:
            details["reason"] = reason
        message = f"The murano-agent did not respond within {timeout:g} seconds"
        super().__init__({"message": f"{message} ({reason})" if reason else message,
                          "details": details})


class GuestDown(AgentError):
    """The server a plan waits on is in ERROR (its agent died for good): the cloud's
    reason, naming the server and the agent's last output, is the message."""

    def __init__(self, queue: str, reason: str) -> None:
        super().__init__({"message": reason, "details": {"queue": queue}})


class AgentWaitInterrupted(Exception):  # noqa: N818 - not a failure of the agent
    """The engine stopped waiting for a result because its run is stopping."""


class PlanBuildError(ValueError):
    """A template or its resources cannot make an execution plan; names the field or file."""
