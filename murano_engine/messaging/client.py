"""``AgentClient``: what the engine's Agent class uses to talk to guest agents."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import kombu

from murano_common import amqp
from murano_engine import boundary
from murano_engine.messaging import plans
from murano_engine.messaging.errors import AgentError, AgentTimeout
from murano_engine.messaging.listener import ResultListener
from murano_engine.messaging.results import decode_result
from murano_engine.messaging.signing import PlanSigner

#: The plan ``is_ready`` sends: it does nothing and is valid for every agent version.
PING_PLAN = {"FormatVersion": "2.0.0", "Body": "return", "Scripts": {}, "Files": {}}


class AgentClient:
    """Sends plans to agents of one region and waits for their results.

    ``region`` is the region's generated (stable) name; results come back on
    ``-execution-results-<region>``. Plans are signed when ``signing_key_pem``
    (an RSA private key) is given; ``ssl`` is kombu's TLS setting for the broker
    connections. Safe to share between threads or green threads.
    """

    def __init__(
        self,
        broker_url: str,
        region: str = "",
        signing_key_pem: str | bytes | None = None,
        ssl: bool | dict[str, Any] = False,
    ) -> None:
        self.result_queue = amqp.result_queue_name(region)
        self._url = broker_url
        self._ssl = ssl
        self._signer = PlanSigner(signing_key_pem) if signing_key_pem else None
        self._stamps = plans.StampClock()
        self._lock = threading.Lock()
        self._conn: kombu.Connection | None = None
        self._declared: set[str] = set()
        self._listener = ResultListener(broker_url, self.result_queue, ssl)
        self._regions: dict[str, AgentClient] = {}

    def for_region(self, region: str) -> AgentClient:
        """The client of region ``region`` (results on its own queue) on the same broker,
        with the same signing key; made once, closed with this one."""
        if amqp.result_queue_name(region) == self.result_queue:
            return self
        with self._lock:
            sibling = self._regions.get(region)
            if sibling is None:
                sibling = self._regions[region] = AgentClient(self._url, region, ssl=self._ssl)
                sibling._signer = self._signer
                sibling._stamps = self._stamps  # stamps keep growing whichever client sends
            return sibling

    def listen(self) -> None:
        """Start consuming the result queue now (``call`` also starts it when needed)."""
        self._listener.start()

    @staticmethod
    def queue_name(environment_id: str, instance_id: str) -> str:
        """The input queue of an instance's agent: ``e<envId>-h<instanceId>``."""
        return amqp.agent_queue_name(environment_id, instance_id)

    def signing_key(self, line_prefix: str = "") -> str:
        """The public key agents verify with (PKCS#1 PEM, lines prefixed), or ''."""
        return self._signer.public_key_pem(line_prefix) if self._signer else ""

    def build_plan(self, template: dict[str, Any], read_resource: plans.ReadResource) -> dict:
        """A wire plan from a template; ``read_resource(name)`` returns a script file's bytes.

        Raises PlanBuildError naming the template field or file that is wrong.
        """
        return plans.build_plan(template, read_resource, self._stamps.next())

    def send(self, queue: str, plan: dict[str, Any]) -> str:
        """Publish ``plan`` to ``queue`` without waiting; returns its message id."""
        message_id = str(plan.get("ID") or boundary.outside().new_id())
        self._publish(queue, plan, message_id)
        return message_id

    def call(self, queue: str, plan: dict[str, Any], timeout: float,
             interrupted: Callable[[], bool] | None = None) -> Any:
        """Publish ``plan`` and wait for its result; returns what the plan returned.

        Raises AgentError for an error result, AgentTimeout after ``timeout`` seconds,
        AgentWaitInterrupted soon after ``interrupted()`` turns true (the run is
        stopping; the plan goes on in the agent).
        """
        message_id = str(plan.get("ID") or boundary.outside().new_id())
        self._listener.start()
        waiter = self._listener.subscribe(message_id)
        try:
            self._publish(queue, plan, message_id)
            result = waiter.wait(timeout, interrupted)
        finally:
            self._listener.unsubscribe(message_id)
        if result is None:
            raise AgentTimeout(queue, timeout)
        return decode_result(result)

    def is_ready(self, queue: str, timeout: float = 100) -> bool:
        """True when the agent answers a no-op plan within ``timeout`` seconds."""
        try:
            self.call(queue, dict(PING_PLAN, ID=boundary.outside().new_id()), timeout)
        except AgentTimeout:
            return False
        except AgentError:
            return True  # it answered, so it is there
        return True

    def close(self) -> None:
        """Stop the result listener and close the publishing connection (and the other
        regions' clients made by :meth:`for_region`)."""
        with self._lock:
            siblings, self._regions = list(self._regions.values()), {}
        for sibling in siblings:
            sibling.close()
        self._listener.stop()
        with self._lock:
            if self._conn is not None:
                self._conn.release()
                self._conn = None

    def _publish(self, queue: str, plan: dict[str, Any], message_id: str) -> None:
        with self._lock:  # stamps are taken in publishing order, so they grow per agent
            wire = dict(plan, Stamp=self._stamps.next())
            body = json.dumps(wire)
            headers = {"signature": self._signer.sign(queue, body)} if self._signer else {}
            try:
                self._publish_once(queue, body, message_id, headers)
            except OSError:
                self._reset()
                self._publish_once(queue, body, message_id, headers)

    def _publish_once(self, queue: str, body: str, message_id: str, headers: dict) -> None:
        if self._conn is None:
            self._conn = amqp.connection(self._url, f"engine {self.result_queue}", ssl=self._ssl)
            self._declared.clear()
        conn = self._conn
        try:
            channel = conn.default_channel
            for name in (queue, self.result_queue):
                if name not in self._declared:
                    amqp.agent_queue(name)(channel).declare()
                    self._declared.add(name)
            kombu.Producer(channel).publish(
                body,
                exchange="",
                routing_key=queue,
                message_id=message_id,
                headers=headers,
                delivery_mode=2,
            )
        except (*conn.connection_errors, *conn.channel_errors) as exc:
            raise OSError(f"cannot publish to {queue}: {exc}") from exc

    def _reset(self) -> None:
        if self._conn is not None:
            self._conn.release()
        self._conn = None
