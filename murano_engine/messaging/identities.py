"""Broker identities of servers: one RabbitMQ user per server's agent, and its rights.

A server's agent gets a user of its own (:func:`identity_name` of its input queue)
whose permissions, in the agents' virtual host, are: configure and read its own
input queue (declare and consume it), write the result exchange of its
environment (:func:`result_exchange_name`, bound to the region's result queue).
Nothing else: it cannot publish into any queue directly (no write on the default
exchange), nor read, declare, purge or delete another queue. Users are made and
removed through RabbitMQ's management HTTP API with the administrative login of
``[rabbitmq] management_url``.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import logging
import re
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

LOG = logging.getLogger(__name__)

#: Every server's broker user is named with this prefix (and only those are revoked).
USER_PREFIX = "murano-agent-"
#: Seconds one management API request may take.
REQUEST_TIMEOUT = 10.0
#: The management API's port when ``management_url`` is not configured.
MANAGEMENT_PORT = 15672


class IdentityError(Exception):
    """The broker's management API refused or could not be reached."""


@dataclass(frozen=True)
class BrokerIdentity:
    """The credentials and result exchange one server's agent is given."""

    login: str
    password: str
    virtual_host: str
    result_exchange: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def identity_name(queue: str) -> str:
    """The broker user of the agent consuming ``queue`` (``murano-agent-<queue>``)."""
    return f"{USER_PREFIX}{queue}"


def result_exchange_name(environment_id: str) -> str:
    """The exchange an environment's agents publish results to: ``e<envId>-results``."""
    return f"e{environment_id}-results".lower()


def with_credentials(url: str, login: str, password: str) -> str:
    """``url`` (an AMQP URL) with ``login`` and ``password`` in place of its own."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(
        netloc=f"{quote(login, safe='')}:{quote(password, safe='')}@{host}"))


def _exact(name: str) -> str:
    """A permission pattern matching ``name`` and nothing else."""
    return f"^{re.escape(name)}$"


class BrokerIdentities:
    """Mints and revokes servers' broker users through the management HTTP API."""

    def __init__(self, management_url: str, virtual_host: str = "/",
                 timeout: float = REQUEST_TIMEOUT) -> None:
        parts = urlsplit(management_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise IdentityError(f"[rabbitmq] management_url {management_url!r} is not an "
                                "http(s) URL of RabbitMQ's management API")
        self.virtual_host = virtual_host
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._base = parts.path.rstrip("/")
        credentials = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        self._auth = "Basic " + base64.b64encode(credentials.encode()).decode("ascii")
        self._timeout = timeout
        self._where = urlunsplit(parts._replace(netloc=f"{self._host}:{self._port}"))

    @classmethod
    def from_config(cls, config: Mapping[str, Mapping[str, Any]]) -> BrokerIdentities | None:
        """From ``[rabbitmq]``; None when servers share the engine's login
        (``server_identities`` off, or a broker that is not RabbitMQ, as ``memory://``)."""
        rabbit = config["rabbitmq"]
        if not rabbit.get("server_identities", True):
            return None
        url = str(rabbit.get("url") or "")
        if url and not url.startswith(("amqp://", "amqps://", "pyamqp://")):
            return None
        if url:
            parts = urlsplit(url)
            host, vhost = parts.hostname or "localhost", unquote(parts.path[1:]) or "/"
            login, password = unquote(parts.username or "guest"), unquote(parts.password or "guest")
        else:
            host, vhost = str(rabbit["host"]), str(rabbit["virtual_host"])
            login, password = str(rabbit["login"]), str(rabbit["password"])
        management = str(rabbit.get("management_url") or "")
        if not management:
            management = (f"http://{quote(login, safe='')}:{quote(password, safe='')}@"
                          f"{host}:{MANAGEMENT_PORT}")
        return cls(management, vhost)

    # -- what the engine calls -----------------------------------------------------------

    def mint(self, queue: str, environment_id: str, result_queue: str) -> BrokerIdentity:
        """A new user for the agent consuming ``queue`` (a new password if it exists),
        with the environment's result exchange bound to ``result_queue``."""
        from murano_common.amqp import QUEUE_ARGUMENTS  # kombu: only once a server is made

        exchange = result_exchange_name(environment_id)
        vhost = quote(self.virtual_host, safe="")
        login, password = identity_name(queue), secrets.token_urlsafe(24)
        with self._connection() as conn:
            self._send(conn, "PUT", f"/api/exchanges/{vhost}/{quote(exchange, safe='')}",
                       {"type": "direct", "durable": True, "auto_delete": False})
            self._send(conn, "PUT", f"/api/queues/{vhost}/{quote(result_queue, safe='')}",
                       {"durable": True, "auto_delete": False,
                        "arguments": QUEUE_ARGUMENTS})
            self._send(conn, "POST", f"/api/bindings/{vhost}/e/{quote(exchange, safe='')}"
                                     f"/q/{quote(result_queue, safe='')}",
                       {"routing_key": result_queue})
            self._send(conn, "PUT", f"/api/users/{quote(login, safe='')}",
                       {"password": password, "tags": ""})
            self._send(conn, "PUT", f"/api/permissions/{vhost}/{quote(login, safe='')}",
                       {"configure": _exact(queue), "write": _exact(exchange),
                        "read": _exact(queue)})
        LOG.debug("broker user %s minted for queue %s", login, queue)
        return BrokerIdentity(login, password, self.virtual_host, exchange)

    def revoke(self, queue: str) -> bool:
        """Delete the user of the agent consuming ``queue`` (its connections close with
        it), then the queue; False when there was no such user."""
        login = identity_name(queue)
        vhost = quote(self.virtual_host, safe="")
        with self._connection() as conn:
            gone = self._send(conn, "DELETE", f"/api/users/{quote(login, safe='')}",
                              missing_ok=True) is not None
            self._send(conn, "DELETE", f"/api/queues/{vhost}/{quote(queue, safe='')}",
                       missing_ok=True)
        if gone:
            LOG.debug("broker user %s revoked", login)
        return gone

    def remove_exchange(self, environment_id: str) -> bool:
        """Delete an environment's result exchange; False when there was none."""
        vhost = quote(self.virtual_host, safe="")
        name = quote(result_exchange_name(environment_id), safe="")
        return self._request("DELETE", f"/api/exchanges/{vhost}/{name}", missing_ok=True)

    def users(self) -> list[str]:
        """The names of every server user the broker has now."""
        with self._connection() as conn:
            listing = self._send(conn, "GET", "/api/users?columns=name", None, False)
        return sorted(u["name"] for u in listing if str(u["name"]).startswith(USER_PREFIX))

    # -- HTTP ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _connection(self) -> Iterator[http.client.HTTPConnection]:
        """One keep-alive connection to the management API for a few requests."""
        kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = kind(self._host, self._port, timeout=self._timeout)
        try:
            yield conn
        finally:
            conn.close()

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None,
                 missing_ok: bool = False) -> bool:
        with self._connection() as conn:
            return self._send(conn, method, path, body, missing_ok) is not None

    def _send(self, conn: http.client.HTTPConnection, method: str, path: str,
              body: dict[str, Any] | None = None, missing_ok: bool = False) -> Any:
        """The decoded answer (True for an empty one); None for a 404 when ``missing_ok``."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": self._auth, "Content-Type": "application/json"}
        try:
            conn.request(method, self._base + path, data, headers)
            response = conn.getresponse()
            answer = response.read()
        except OSError as exc:
            raise IdentityError(f"RabbitMQ's management API at {self._where} cannot be "
                                f"reached ({exc}); enable the rabbitmq_management plugin "
                                "or set [rabbitmq] management_url") from None
        if response.status == 404 and missing_ok:
            return None
        if response.status >= 300:
            raise IdentityError(f"RabbitMQ's management API at {self._where} answered "
                                f"{method} {path} with {response.status}: "
                                f"{answer[:300].decode('utf-8', 'replace')}")
        return json.loads(answer) if answer else True
