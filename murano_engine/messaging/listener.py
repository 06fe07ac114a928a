"""The per-region result listener: one consumer of the result queue, many waiters."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import kombu

from murano_common import amqp

LOG = logging.getLogger(__name__)

#: Seconds one wait for broker traffic lasts (bounds how late ``stop`` is noticed).
POLL_SECONDS = 0.5


class Waiter:
    """Where one expected result arrives."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.result: dict[str, Any] | None = None

    def deliver(self, result: dict[str, Any]) -> None:
        self.result = result
        self._event.set()

    def wait(self, timeout: float) -> dict[str, Any] | None:
        """The result once it is in; None after ``timeout`` seconds without it."""
        self._event.wait(timeout)
        return self.result


class ResultListener:
    """Consumes a result queue in a background thread (green under eventlet).

    Each result goes to the waiter subscribed under its ``SourceID`` or, failing
    that (v1 results), its AMQP ``message_id``; results nobody waits for are dropped.
    """

    def __init__(self, broker_url: str, queue: str) -> None:
        self.queue = queue
        self._url = broker_url
        self._waiters: dict[str, Waiter] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
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
                self._stopping.clear()
                self._thread = threading.Thread(
                    target=self._run, name=f"results {self.queue}", daemon=True
                )
                self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        backoff = amqp.Backoff(0.5, 30.0)
        while not self._stopping.is_set():
            conn = amqp.connection(self._url, self.queue)
            try:
                conn.connect()
                backoff.reset()
                queue = amqp.agent_queue(self.queue)
                with kombu.Consumer(conn, [queue], on_message=self._on_message, no_ack=True):
                    while not self._stopping.is_set():
                        amqp.drain(conn, POLL_SECONDS)
            except (*conn.connection_errors, *conn.channel_errors, OSError) as exc:
                LOG.warning("result listener on %s lost its connection: %s", self.queue, exc)
            finally:
                conn.release()
            self._stopping.wait(backoff.next_delay())

    def _on_message(self, message: kombu.Message) -> None:
        body = message.body
        try:
            result = json.loads(body.decode("utf-8") if isinstance(body, bytes) else body)
            key = result.get("SourceID") or message.properties.get("message_id")
        except (ValueError, AttributeError) as exc:
            LOG.warning("dropping undecodable result on %s: %s", self.queue, exc)
            return
        with self._lock:
            waiter = self._waiters.pop(str(key), None)
        if waiter is None:
            LOG.debug("dropping result %s: nobody waits for it", key)
            return
        waiter.deliver(result)
