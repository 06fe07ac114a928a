"""Broker connections: kombu settings, agent queue declarations, reconnection back-off.

The engine side (``murano_engine.messaging``) uses the same helpers, so both ends
declare queues identically.
"""

from __future__ import annotations

import ssl
import time

import kombu

from murano_agent.config import ConfigError, RabbitConfig

#: Queue arguments Murano's engine declares agent queues with (24 h expiry).
QUEUE_ARGUMENTS = {"x-ha-policy": "all", "x-expires": 86_400_000}


def _ssl_options(cfg: RabbitConfig) -> dict[str, object] | bool:
    if not cfg.ssl:
        return False
    if cfg.insecure:
        reqs = ssl.CERT_OPTIONAL if cfg.ca_certs else ssl.CERT_NONE
    else:
        reqs = ssl.CERT_REQUIRED
    options: dict[str, object] = {"cert_reqs": reqs}
    if cfg.ca_certs:
        options["ca_certs"] = cfg.ca_certs
    if cfg.ssl_version:
        name = "PROTOCOL_" + cfg.ssl_version.upper().replace(".", "_")
        if not hasattr(ssl, name):
            raise ConfigError(f"[rabbitmq] ssl_version {cfg.ssl_version!r} is not known")
        options["ssl_version"] = getattr(ssl, name)
    return options


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


#: Seconds between polls of the in-process ``memory://`` transport.
MEMORY_POLL_SECONDS = 0.01


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


def connect(cfg: RabbitConfig, name: str, confirm_publish: bool = True) -> kombu.Connection:
    """A (not yet connected) kombu connection from ``[rabbitmq]`` settings."""
    if cfg.url:
        conn = kombu.Connection(cfg.url, heartbeat=cfg.heartbeat, connect_timeout=5)
    else:
        conn = kombu.Connection(
            hostname=cfg.host,
            port=cfg.port,
            userid=cfg.login,
            password=cfg.password,
            virtual_host=cfg.virtual_host,
            ssl=_ssl_options(cfg),
            heartbeat=cfg.heartbeat,
            connect_timeout=5,
            transport="pyamqp",
        )
    return prepare(conn, name, confirm_publish)


def agent_queue(name: str) -> kombu.Queue:
    """A durable queue on the default exchange, declared as Murano declares agent queues
    (engine and agent use the same arguments, so either may declare it first)."""
    return kombu.Queue(
        name,
        exchange=kombu.Exchange("", type="direct", durable=True),
        routing_key=name,
        durable=True,
        auto_delete=False,
        queue_arguments=QUEUE_ARGUMENTS,
    )


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
