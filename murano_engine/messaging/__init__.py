"""Engine <-> guest agent messaging over RabbitMQ (Murano's wire protocol).

``AgentClient`` builds execution plans from templates, signs and publishes them
to ``e<envId>-h<instanceId>`` queues on the default exchange, and waits for the
results on the region's ``-execution-results-<name>`` queue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from murano_engine.messaging.errors import AgentError, AgentTimeout, GuestDown, PlanBuildError

if TYPE_CHECKING:
    from murano_engine.messaging.client import AgentClient

__all__ = ["AgentClient", "AgentError", "AgentTimeout", "GuestDown", "PlanBuildError"]


def __getattr__(name: str) -> Any:
    # The client (kombu, cryptography) is imported on first use: running MuranoPL
    # that talks to no agent does not pay for it at start-up.
    if name == "AgentClient":
        from murano_engine.messaging.client import AgentClient
        return AgentClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
