"""The agent's broker connection, made from its ``[rabbitmq]`` settings.

Queue declarations and the rest of the protocol are shared with the engine, in
:mod:`murano_common.amqp`.
"""

from __future__ import annotations

import ssl

import kombu

from murano_agent.config import ConfigError, RabbitConfig
from murano_common import amqp


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


def connect(cfg: RabbitConfig, name: str, confirm_publish: bool = True) -> kombu.Connection:
    """A (not yet connected) kombu connection from ``[rabbitmq]`` settings."""
    if cfg.url:
        return amqp.connection(cfg.url, name, confirm_publish, heartbeat=cfg.heartbeat)
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
    return amqp.prepare(conn, name, confirm_publish)

