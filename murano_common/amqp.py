"""The broker side of the engine–agent protocol, used by both ends.

Queue names and declarations (either end may declare a queue first, so both
must declare it alike), broker connections, waiting for broker traffic and reconnection back-off.
"""

from __future__ import annotations

import time
from typing import Any

import kombu

#: Queue arguments Murano's engine declares agent queues with (24 h expiry).
QUEUE_ARGUMENTS = {"x-ha-policy": "all", "x-expires": 86_400_000}
#: Seconds between polls of the in-process ``memory://`` transport.
MEMORY_POLL_SECONDS = 0.01


def agent_queue_name(environment_id: str, instance_id: str) -> str:
    """The input queue of an instance's agent: ``e<envId>-h<instanceId>``."""
    return f"e{environment_id}-h{instance_id}".lower()


def result_queue_name(region: str) -> str:
    """The queue a region's agents send results to: ``-execution-results-<region>``."""
    return f"-execution-results-{region}".lower()


def agent_queue(name: str) -> kombu.Queue:
    """A durable queue on the default exchange, declared as Murano declares agent queues."""
    return kombu.Queue(
        name,
        exchange=kombu.Exchange("", type="direct", durable=True),
        routing_key=name,
        durable=True,
        auto_delete=False,
        queue_arguments=QUEUE_ARGUMENTS,
    )


def is_amqp(conn: kombu.Connection) -> bool:
    """True for a real broker connection (not the in-process ``memory://`` transport)."""
    return conn.transport_cls in ("amqp", "pyamqp", "amqps")


def prepare(conn: kombu.Connection, name: str, confirm_publish: bool = True) -> kombu.Connection:
    """Tune a new connection: a ``name`` shown by the broker and, with ``confirm_publish``,
    publishes that wait for the broker's confirm (AMQP only)."""
    if is_amqp(conn):
        conn.transport_options.update(
            confirm_publish=confirm_publish, client_properties={"connection_name": name}
        )
    return conn


def connection(
    url: str, name: str, confirm_publish: bool = True, **options: Any
) -> kombu.Connection:
    """A (not yet connected) connection to ``url``, prepared as :func:`prepare` does;
    ``options`` go to ``kombu.Connection``."""
    options.setdefault("connect_timeout", 5)
    return prepare(kombu.Connection(url, **options), name, confirm_publish)


def drain(conn: kombu.Connection, timeout: float) -> None:
    """Handle the broker traffic that arrives within ``timeout`` seconds (if any).

    ``memory://`` is polled here, not by kombu: kombu sleeps between polls with
    the ``time.sleep`` it imported, which under eventlet monkey-patching would
    hold up every green thread; ``time.sleep`` looked up now is the green one.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.drain_events(timeout=timeout if is_amqp(conn) else 0)
            return
        except TimeoutError:
            if is_amqp(conn) or time.monotonic() >= deadline:
                return
            time.sleep(MEMORY_POLL_SECONDS)


class Backoff:
    """Growing delays between reconnection attempts: ``first``, x2 each time, up to ``most``."""

    def __init__(self, first: float, most: float) -> None:
        self._first = first
        self._most = most
        self._next = first

    def next_delay(self) -> float:
        delay, self._next = self._next, min(self._next * 2, self._most)
        return delay

    def reset(self) -> None:
        self._next = self._first
