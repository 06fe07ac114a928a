"""The per-region result listener: one consumer of the result queue, many waiters."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import kombu

from murano_common import amqp
from murano_engine.dsl.errors import LoadError
from murano_engine.dsl.json_loader import load_json
from murano_engine.messaging.errors import AgentWaitInterrupted

LOG = logging.getLogger(__name__)

#: Seconds before the first reconnection attempt, and the longest wait between two.
RETRY_DELAY, RETRY_MAX_DELAY = 0.5, 5.0
#: Results the broker may hand over before the listener has acked the earlier ones.
PREFETCH = 64
#: How often a wait that may be interrupted checks whether it is.
INTERRUPT_POLL = 0.1


def unreadable_result(plan_id: str, why: Exception) -> dict[str, Any]:
    """The error result a plan gets when its agent's answer cannot be read (too large, not
    JSON): a failure of the plan, as the agent reports one."""
    return {"FormatVersion": "2.0.0", "SourceID": plan_id, "ErrorCode": 1,
            "Body": {"Message": f"the agent's result could not be read: {why}"}}


class Waiter:
    """Where one expected result arrives."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.result: dict[str, Any] | None = None

    def deliver(self, result: dict[str, Any]) -> None:
        self.result = result
        self._event.set()

    def wait(self, timeout: float,
             interrupted: Callable[[], bool] | None = None) -> dict[str, Any] | None:
        """The result once it is in; None after ``timeout`` seconds without it.

        With ``interrupted``, it is asked every :data:`INTERRUPT_POLL` seconds, and
        :class:`AgentWaitInterrupted` raised once it says so."""
        if interrupted is None:
            self._event.wait(timeout)
            return self.result
        deadline = time.monotonic() + timeout
        while not self._event.wait(min(INTERRUPT_POLL, max(0.0, deadline - time.monotonic()))):
            if interrupted():
                raise AgentWaitInterrupted("stopped waiting for the agent's result")
            if time.monotonic() >= deadline:
                break
        return self.result


class ResultListener(amqp.QueueConsumer):
    """Consumes a result queue in a background thread (green under eventlet).

    Each result goes to the waiter subscribed under its ``SourceID`` or, failing
    that (v1 results), its AMQP ``message_id``; results nobody waits for are dropped.
    A result is acked only once handed over (or dropped), so one delivered just
    before the connection dies comes again. ``on_reconnect`` is called (in the
    listener's thread) each time consuming resumes after an outage.
    """

    def __init__(
        self,
        broker_url: str,
        queue: str,
        ssl: bool | dict[str, Any] = False,
        on_reconnect: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(
            amqp.connection(broker_url, queue, ssl=ssl), f"results {queue}", RETRY_DELAY,
            RETRY_MAX_DELAY,
        )
        self.queue = queue
        self._on_reconnect = on_reconnect
        self._waiters: dict[str, Waiter] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def subscribe(self, message_id: str) -> Waiter:
        """Register interest in a result (do it before publishing the plan)."""
        waiter = Waiter()
        with self._lock:
            self._waiters[message_id] = waiter
        return waiter

    def unsubscribe(self, message_id: str) -> None:
        with self._lock:
            self._waiters.pop(message_id, None)

    def start(self) -> None:
        """Start consuming, if not already doing so."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self.stopping.clear()
                self._thread = threading.Thread(target=self.run, name=self.name, daemon=True)
                self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        super().stop()
        if self._thread is not None:
            self._thread.join(timeout)

    def get_consumers(
        self, consumer_class: Callable[..., kombu.Consumer], channel: Any
    ) -> list[kombu.Consumer]:
        queue = amqp.agent_queue(self.queue)
        return [
            consumer_class(queues=[queue], on_message=self._on_message, prefetch_count=PREFETCH)
        ]

    def on_reconnected(self) -> None:
        if self._on_reconnect is not None:
            self._on_reconnect()

    def _on_message(self, message: kombu.Message) -> None:
        self._hand_over(message)
        message.ack()

    def _hand_over(self, message: kombu.Message) -> None:
        """Give a result to its waiter (one that cannot be read: an error result, when the
        message names its plan), or drop it (logged)."""
        try:
            # Results come from guests, which run tenants' code: bounded like any file.
            result = load_json(message.body, f"result on {self.queue}")
            key = result.get("SourceID") or message.properties.get("message_id")
        except (LoadError, AttributeError) as exc:
            LOG.warning("dropping undecodable result on %s: %s", self.queue, exc)
            key = message.properties.get("message_id")
            if not key:
                return
            result = unreadable_result(str(key), exc)  # its plan fails now, not at its timeout
        with self._lock:
            waiter = self._waiters.pop(str(key), None)
        if waiter is None:
            LOG.debug("dropping result %s: nobody waits for it", key)
            return
        waiter.deliver(result)
