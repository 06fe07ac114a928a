"""The names of the engine's and agents' queues: pure functions, without kombu (a plan,
which reaches no broker, names queues too)."""

from __future__ import annotations


def agent_queue_name(environment_id: str, instance_id: str) -> str:
    """The input queue of an instance's agent: ``e<envId>-h<instanceId>``."""
    return f"e{environment_id}-h{instance_id}".lower()


def environment_region(environment_id: str, region: str) -> str:
    """A region's name scoped to its environment (the engine's id of it), which names
    the region's result queue: ``e<envId>-<region>``, ``e<envId>`` for the default."""
    return f"e{environment_id}-{region}" if region else f"e{environment_id}"


def result_queue_name(region: str) -> str:
    """The queue a region's agents send results to: ``-execution-results-<region>``."""
    return f"-execution-results-{region}".lower()
