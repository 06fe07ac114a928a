"""``AgentClient``: what the engine's Agent class uses to talk to guest agents."""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import kombu
from kombu.exceptions import OperationalError

from murano_common import amqp
from murano_engine.dsl import boundary
from murano_engine.messaging import plans
from murano_engine.messaging.errors import (
    AgentError,
    AgentTimeout,
    AgentWaitInterrupted,
    GuestDown,
)
from murano_engine.messaging.listener import ResultListener
from murano_engine.messaging.results import decode_result
from murano_engine.messaging.signing import EnvironmentKeys, KeyRing, PlanSigner

LOG = logging.getLogger(__name__)

#: The plan ``is_ready`` sends: it does nothing and is valid for every agent version.
PING_PLAN = {"FormatVersion": "2.0.0", "Body": "return", "Scripts": {}, "Files": {}}
#: Seconds ``send`` keeps trying to publish while the broker is unreachable.
SEND_TIMEOUT = 60.0
#: Seconds between two publish attempts while the broker is unreachable: first, longest.
RETRY_DELAY, RETRY_MAX_DELAY = 0.25, 2.0
#: Longest wait, in one publish attempt, for the connection and for the broker's confirm.
ATTEMPT_SECONDS = 5.0


@dataclasses.dataclass(frozen=True)
class _Awaited:
    """A published plan whose result a ``call`` still waits for."""

    queue: str
    plan: dict[str, Any]
    deadline: float  # time.monotonic() when the call gives up
    environment: str | None  # whose key signs it


class AgentClient:
    """Sends plans to agents of one region and waits for their results.

    ``region`` is the region's generated (stable) name; results come back on
    ``-execution-results-<region>``. Plans are signed with the key of the
    environment they are sent for, from ``keys``, or else with ``signing_key_pem``
    (an RSA private key) whatever the environment; unsigned with neither. ``ssl`` is
    kombu's TLS setting for the broker connections. Safe to share between threads
    or green threads.

    Broker outages: a publish is tried again until the call's time is up; when
    the result listener reconnects, every plan a call still waits for is
    published again with the same ID (an agent answers a plan it already ran
    from its store, and ignores one it still holds), so a result lost with the
    connection is asked for again. The broker is waited for once per outage:
    after a publish gave up, the next ones try once until a publish gets through
    again (a destroy's stop plans, one per server, each waited out the whole
    timeout, one after the other).
    """

    def __init__(
        self,
        broker_url: str,
        region: str = "",
        signing_key_pem: str | bytes | None = None,
        ssl: bool | dict[str, Any] = False,
        keys: KeyRing | None = None,
    ) -> None:
        self.result_queue = amqp.result_queue_name(region)
        self._url = broker_url
        self._ssl = ssl
        self._signer = PlanSigner(signing_key_pem) if signing_key_pem else None
        self.keys = keys
        self._stamps = plans.StampClock()
        self._guest_failure: Callable[[str], str | None] = lambda queue: None
        self._lock = threading.Lock()  # regions, awaited calls, the re-publisher
        self._regions: dict[str, AgentClient] = {}
        self._awaited: dict[str, _Awaited] = {}
        self._republish_due = False
        self._republisher: threading.Thread | None = None
        self._closed = threading.Event()
        # The publishing connection, and stamps taken in publishing order.
        self._publishing = threading.Lock()
        self._conn: kombu.Connection | None = None
        self._declared: set[str] = set()
        self._outage = amqp.Outage()  # of publishing
        self._waited_out = False  # a publish gave up in this outage
        self._listener = ResultListener(
            broker_url, self.result_queue, ssl, on_reconnect=self._on_listener_back
        )

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
                sibling.keys = self.keys
                sibling._stamps = self._stamps  # stamps keep growing whichever client sends
                sibling._guest_failure = self._guest_failure
            return sibling

    def let_go(self, environment_id: str) -> None:
        """A task of environment ``environment_id`` ended: close the clients of its
        regions (their result listeners). Its next task, in whichever process, makes
        them again; a listener kept here would declare a region's queue again after
        another process's deletion of the environment removed it."""
        prefix = amqp.environment_region(environment_id, "")
        with self._lock:
            ended = [self._regions.pop(region) for region in list(self._regions)
                     if region == prefix or region.startswith(prefix + "-")]
        for sibling in ended:
            sibling.close()

    def watch_guests(self, failure: Callable[[str], str | None]) -> None:
        """Have waits end early when ``failure(queue)`` says why the server of ``queue``
        is in ERROR (the cloud's :meth:`guest_failure`; asked every 0.1 s while a call
        waits): the call raises GuestDown with that reason."""
        self._guest_failure = failure
        with self._lock:
            for sibling in self._regions.values():
                sibling._guest_failure = failure

    def remove_region(self, region: str) -> None:
        """Its environment is gone: stop taking region ``region``'s results and delete
        its result queue (this client's own queue stays)."""
        name = amqp.result_queue_name(region)
        if name == self.result_queue:
            return
        with self._lock:
            sibling = self._regions.pop(region, None)
        if sibling is not None:
            sibling.close()
        with amqp.connection(self._url, "engine", ssl=self._ssl) as conn:
            conn.default_channel.queue_delete(name)

    def listen(self) -> None:
        """Start consuming the result queue now (``call`` also starts it when needed)."""
        self._listener.start()

    @staticmethod
    def queue_name(environment_id: str, instance_id: str) -> str:
        """The input queue of an instance's agent: ``e<envId>-h<instanceId>``."""
        return amqp.agent_queue_name(environment_id, instance_id)

    def signing_key(self, line_prefix: str = "", environment: str | None = None) -> str:
        """The public key the agents of ``environment`` verify with (PKCS#1 PEM, lines
        prefixed), or '' when plans go unsigned."""
        keys = self._keys_for(environment)
        return keys.current.public_key_pem(line_prefix) if keys is not None else ""

    def _keys_for(self, environment: str | None) -> EnvironmentKeys | None:
        """The keys a plan for ``environment`` is signed with (None: unsigned)."""
        if self.keys is not None:
            if not environment:
                raise ValueError("a plan is signed with its environment's key: no "
                                 "environment was given")
            return self.keys.keys(environment)
        return EnvironmentKeys(self._signer) if self._signer is not None else None

    def build_plan(self, template: dict[str, Any], read_resource: plans.ReadResource) -> dict:
        """A wire plan from a template; ``read_resource(name)`` returns a script file's bytes.

        Raises PlanBuildError naming the template field or file that is wrong.
        """
        return plans.build_plan(template, read_resource, self._stamps.next())

    def send(self, queue: str, plan: dict[str, Any], timeout: float = SEND_TIMEOUT,
             environment: str | None = None) -> str:
        """Publish ``plan`` to ``queue`` (signed for ``environment``) without waiting for
        its result; returns its message id. Raises OSError when the broker takes it in
        no attempt within ``timeout`` seconds."""
        message_id = str(plan.get("ID") or boundary.outside().new_id())
        self._publish(queue, plan, message_id, time.monotonic() + timeout,
                      environment=environment)
        return message_id

    def call(self, queue: str, plan: dict[str, Any], timeout: float,
             interrupted: Callable[[], bool] | None = None,
             environment: str | None = None) -> Any:
        """Publish ``plan`` and wait for its result; returns what the plan returned.

        The plan is signed with ``environment``'s key. Raises AgentError for an error
        result, GuestDown as soon as the cloud says the
        server is in ERROR (see :meth:`watch_guests`), AgentTimeout after ``timeout``
        seconds (also when the broker could not take the plan in that time),
        AgentWaitInterrupted soon after ``interrupted()`` turns true (the run is
        stopping; the plan goes on in the agent).
        """
        message_id = str(plan.get("ID") or boundary.outside().new_id())
        deadline = time.monotonic() + timeout
        self._listener.start()
        waiter = self._listener.subscribe(message_id)

        def stop_waiting() -> bool:
            reason = self._guest_failure(queue)
            if reason:
                raise GuestDown(queue, reason)
            return interrupted is not None and interrupted()

        try:
            self._publish(queue, plan, message_id, deadline,
                          wanted=lambda: interrupted is None or not interrupted(),
                          environment=environment)
            with self._lock:
                self._awaited[message_id] = _Awaited(queue, plan, deadline, environment)
            result = waiter.wait(max(0.0, deadline - time.monotonic()), stop_waiting)
        except OSError as exc:
            if interrupted is not None and interrupted():
                raise AgentWaitInterrupted("stopped sending the plan") from exc
            raise AgentTimeout(queue, timeout, f"the broker did not take the plan: {exc}") from exc
        finally:
            self._listener.unsubscribe(message_id)
            with self._lock:
                self._awaited.pop(message_id, None)
        if result is None:
            raise AgentTimeout(queue, timeout)
        return decode_result(result)

    def is_ready(self, queue: str, timeout: float = 100, environment: str | None = None) -> bool:
        """True when the agent answers a no-op plan within ``timeout`` seconds."""
        try:
            self.call(queue, dict(PING_PLAN, ID=boundary.outside().new_id()), timeout,
                      environment=environment)
        except AgentTimeout:
            return False
        except GuestDown:
            raise
        except AgentError:
            return True  # it answered, so it is there
        return True

    def close(self) -> None:
        """Stop the result listener and close the publishing connection (and the other
        regions' clients made by :meth:`for_region`); publishes still retrying give up."""
        self._closed.set()
        with self._lock:
            siblings, self._regions = list(self._regions.values()), {}
            republisher = self._republisher
        for sibling in siblings:
            sibling.close()
        self._listener.stop()
        if republisher is not None:
            republisher.join(ATTEMPT_SECONDS)
        with self._publishing:
            self._reset()

    def _publish(
        self,
        queue: str,
        plan: dict[str, Any],
        message_id: str,
        deadline: float,
        wanted: Callable[[], bool] = lambda: True,
        environment: str | None = None,
    ) -> None:
        """Publish ``plan`` (signed for ``environment``), trying again while the broker
        is unreachable (and ``wanted()``); raises OSError once ``deadline``
        (``time.monotonic()``) has passed, or after one try when an earlier publish
        already gave up in the same outage."""
        delay = RETRY_DELAY
        keys = self._keys_for(environment)
        while True:
            with self._publishing:
                stale = self._conn is not None  # an idle connection may have died unseen
                try:
                    self._publish_once(queue, plan, message_id, deadline, keys)
                except OSError as exc:
                    self._reset()
                    if _is_permanent(exc):
                        raise
                    self._note_down(exc)
                    error = exc
                    if self._waited_out and not stale:
                        raise OSError(f"{exc} (unreachable for {self._outage.lasted():.0f} "
                                      f"s, and waited for once already)") from exc
                else:
                    self._note_up()
                    return
            left = deadline - time.monotonic()
            if left <= 0:
                with self._publishing:
                    self._waited_out = self._outage.since is not None
                raise error
            if self._closed.is_set() or not wanted():
                raise error
            if not stale:
                self._closed.wait(min(delay, left))
                delay = min(delay * 2, RETRY_MAX_DELAY)

    def _publish_once(
        self, queue: str, plan: dict[str, Any], message_id: str, deadline: float,
        keys: EnvironmentKeys | None,
    ) -> None:
        """One attempt, each step bounded by :data:`ATTEMPT_SECONDS` and ``deadline``.

        The stamp is taken here, in publishing order, so stamps grow per agent.
        """
        seconds = min(ATTEMPT_SECONDS, max(deadline - time.monotonic(), 0.1))
        wire = dict(plan, Stamp=self._stamps.next())
        body = json.dumps(wire)
        headers = keys.headers(queue, body) if keys is not None else {}
        if self._conn is None:
            self._conn = amqp.connection(
                self._url, f"engine {self.result_queue}", ssl=self._ssl, connect_timeout=seconds
            )
            self._declared.clear()
        conn = self._conn
        try:
            conn.ensure_connection(max_retries=0)  # one try: retrying is the caller's
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
                timeout=seconds,
            )
        except (
            *conn.connection_errors,
            *conn.recoverable_connection_errors,
            *conn.channel_errors,
            OperationalError,
        ) as exc:
            raise OSError(f"cannot publish to {queue}: {exc}") from exc

    def _reset(self) -> None:
        if self._conn is not None:
            self._conn.release()
        self._conn = None

    def _note_down(self, exc: OSError) -> None:
        if self._outage.begins():
            LOG.warning("engine %s: %s; trying again", self.result_queue, exc)
        else:
            LOG.debug("engine %s: %s", self.result_queue, exc)

    def _note_up(self) -> None:
        self._waited_out = False
        length = self._outage.ends()
        if length is not None:
            LOG.info("engine %s: publishing again after %.1f s", self.result_queue, length)

    def _on_listener_back(self) -> None:
        """The result listener reconnected: have the awaited plans published again."""
        with self._lock:
            self._republish_due = True
            if self._republisher is None and not self._closed.is_set():
                self._republisher = threading.Thread(
                    target=self._republish, name=f"republish {self.result_queue}", daemon=True
                )
                self._republisher.start()

    def _republish(self) -> None:
        """Publish again, with their IDs, the plans whose results calls still wait for
        (once more if the listener reconnects meanwhile)."""
        while True:
            with self._lock:
                if not self._republish_due or self._closed.is_set():
                    self._republisher = None
                    return
                self._republish_due = False
                awaited = list(self._awaited.items())
            if awaited:
                LOG.info(
                    "engine %s: results may have been lost; publishing %d awaited plan(s) again",
                    self.result_queue,
                    len(awaited),
                )
            for message_id, call in awaited:

                def wanted(message_id: str = message_id) -> bool:
                    with self._lock:
                        return message_id in self._awaited

                if not wanted():
                    continue
                try:
                    self._publish(call.queue, call.plan, message_id, call.deadline, wanted,
                                  call.environment)
                except OSError as exc:
                    LOG.debug("engine %s: plan %s not published again: %s",
                              self.result_queue, message_id, exc)


def _is_permanent(exc: OSError) -> bool:
    """Whether a failure to publish is one retrying cannot mend (a missing or unreadable
    certificate file: the configuration is wrong, not the network)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, (FileNotFoundError, PermissionError, IsADirectoryError)):
            return True
        cause = cause.__cause__ or cause.__context__
    return False
