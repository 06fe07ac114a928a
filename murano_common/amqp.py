"""The broker side of the engine–agent protocol, used by both ends.

Queue names and declarations (either end may declare a queue first, so both
must declare it alike), broker connections, and :class:`QueueConsumer`, the
reconnecting consumer loop the agent and the engine's result listener run.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator

import kombu
from kombu.mixins import ConsumerMixin
from kombu.transport import memory

from murano_common.queue_names import (  # noqa: F401 - the names, used through here too
    agent_queue_name,
    environment_region,
    result_queue_name,
)

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

LOG = logging.getLogger(__name__)

#: Queue arguments Murano's engine declares agent queues with (24 h expiry).
QUEUE_ARGUMENTS = {"x-ha-policy": "all", "x-expires": 86_400_000}
#: Seconds one wait for broker traffic lasts (bounds how late ``stop`` is noticed).
POLL_SECONDS = 0.5
#: Seconds between polls of the in-process ``memory://`` transport.
MEMORY_POLL_SECONDS = 0.01


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


class MemoryTransport(memory.Transport):
    """kombu's in-process ``memory://`` transport (same queues), green-thread friendly.

    kombu polls it with the ``time.sleep`` it imported, which under eventlet
    monkey-patching may be the blocking one; this polls with ``time.sleep``
    looked up at each call, which is the green one once patched.
    """

    def drain_events(self, connection: Any, timeout: float | None = None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                super().drain_events(connection, timeout=0)
                return
            except TimeoutError:
                if deadline is not None and time.monotonic() >= deadline:
                    raise
            time.sleep(MEMORY_POLL_SECONDS)


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
    ``memory://`` gets :class:`MemoryTransport`. ``options`` go to ``kombu.Connection``."""
    options.setdefault("connect_timeout", 5)
    if url.split("://", 1)[0] == "memory":
        options["transport"] = MemoryTransport
    return prepare(kombu.Connection(url, **options), name, confirm_publish)


class Outage:
    """The start of a broker outage, for logging it once as it begins and once as it ends
    (the tries between are debug lines)."""

    def __init__(self) -> None:
        self.since: float | None = None  # monotonic

    def begins(self) -> bool:
        """Note a failed try; whether it begins an outage (else it is one more in it)."""
        if self.since is not None:
            return False
        self.since = time.monotonic()
        return True

    def lasted(self) -> float:
        """Seconds since the outage began (0 when there is none)."""
        return 0.0 if self.since is None else time.monotonic() - self.since

    def ends(self) -> float | None:
        """Note a try that got through; the outage's length if it ends one."""
        if self.since is None:
            return None
        length, self.since = time.monotonic() - self.since, None
        return length


class _Stopped(Exception):
    """Raised inside kombu's reconnection wait when the consumer is told to stop."""


class QueueConsumer(ConsumerMixin):
    """kombu's ``ConsumerMixin`` loop for one consuming thread, stoppable at any point.

    Subclasses give ``get_consumers`` (and other ``ConsumerMixin`` hooks).
    :meth:`run` serves until :meth:`stop`: a lost connection is handed to
    :meth:`on_disconnected`, and after ``retry_delay`` seconds
    ``Connection.ensure_connection`` connects again, waiting ``retry_delay``
    more seconds after each refusal, at most ``retry_max_delay``. An outage is
    logged once as it starts (a warning) and once as consuming resumes (info,
    with its length; :meth:`on_reconnected` is called then); refused attempts
    in between are debug lines. Waits for traffic last ``POLL_SECONDS``, so
    :meth:`stop` is noticed that soon (within two seconds while waiting to
    reconnect).
    """

    def __init__(
        self, conn: kombu.Connection, name: str, retry_delay: float, retry_max_delay: float
    ) -> None:
        self.connection = conn
        self.name = name
        self.retry_delay = retry_delay
        self.retry_max_delay = max(retry_delay, retry_max_delay)
        #: Set by :meth:`stop`; cleared again to run once more.
        self.stopping = threading.Event()
        self._outage = Outage()

    @property
    def should_stop(self) -> bool:  # read by ConsumerMixin
        return self.stopping.is_set()

    def stop(self) -> None:
        """Ask :meth:`run` to return (it does so within ``POLL_SECONDS``)."""
        self.stopping.set()

    def run(self) -> None:
        """Consume until :meth:`stop`, reconnecting whenever the connection is lost."""
        errors = (*self.connection_errors, *self.channel_errors, OSError)
        while not self.should_stop:
            try:
                for _ in self.consume(safety_interval=POLL_SECONDS):
                    pass
            except _Stopped:
                return
            except errors as exc:
                self._note_down(exc)
            except Exception:
                LOG.exception("%s: unexpected failure; carrying on", self.name)
            if not self.should_stop:
                self.on_disconnected()
                self.stopping.wait(self.retry_delay)

    def on_disconnected(self) -> None:
        """Called after the connection is lost and after each refused attempt."""

    def on_reconnected(self) -> None:
        """Called once consuming resumes after an outage (not after the first connect)."""

    def on_connection_error(self, exc: Exception, interval: float) -> None:
        self._note_down(exc, interval)
        self.on_disconnected()

    def _note_down(self, exc: Exception, interval: float | None = None) -> None:
        again = "" if interval is None else f"; trying again in {interval:.1f} s"
        if self._outage.begins():
            LOG.warning("%s: broker connection lost or refused: %s%s", self.name, exc, again)
        else:
            LOG.debug("%s: broker still unreachable: %s%s", self.name, exc, again)

    @contextlib.contextmanager
    def consumer_context(self, **kwargs: Any) -> Iterator[tuple[Any, Any, Any]]:
        with super().consumer_context(**kwargs) as context:
            length = self._outage.ends()
            if length is not None:
                LOG.info("%s: broker connection back after %.1f s", self.name, length)
                self.on_reconnected()
            yield context

    @contextlib.contextmanager
    def establish_connection(self) -> Iterator[kombu.Connection]:
        with self.create_connection() as conn:
            conn.ensure_connection(
                self.on_connection_error,
                interval_start=self.retry_delay,
                interval_step=self.retry_delay,
                interval_max=self.retry_max_delay,
                callback=self._raise_if_stopping,
            )
            yield conn

    def _raise_if_stopping(self) -> None:
        if self.should_stop:
            raise _Stopped
