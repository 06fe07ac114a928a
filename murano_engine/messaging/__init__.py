"""Engine <-> guest agent messaging over RabbitMQ (Murano's wire protocol).

``AgentClient`` builds execution plans from templates, signs and publishes them
to ``e<envId>-h<instanceId>`` queues on the default exchange, and waits for the
results on the region's ``-execution-results-<name>`` queue.
"""

from murano_engine.messaging.client import AgentClient
from murano_engine.messaging.errors import AgentError, AgentTimeout, PlanBuildError

__all__ = ["AgentClient", "AgentError", "AgentTimeout", "PlanBuildError"]
