"""Broker identities of servers: one RabbitMQ user per server's agent, and its rights.

A server's agent gets a user of its own (:func:`identity_name` of its input queue)
whose permissions, in the agents' virtual host, are: configure and read its own
input queue (declare and consume it), write the result exchange of its
environment's region (:func:`result_exchange_name`, bound to that region's result
queue, which is the environment's own).
Nothing else: it cannot publish into any queue directly (no write on the default
exchange), nor read, declare, purge or delete another queue. Users are made and
removed through RabbitMQ's management HTTP API with the administrative login of
``[rabbitmq] management_url``.

What a user may take is bounded too (:class:`ServerLimits`): RabbitMQ's per-user
``max-connections`` and ``max-channels``, and, for the results queues of the
virtual host, a policy (:data:`RESULTS_POLICY`) of a length and a size past which
a publish is refused (``reject-publish``: the agent sends its result again later),
so a guest publishing in a loop cannot grow its environment's results queue. A
policy, not queue arguments: a queue declared before keeps its arguments, and the
engine, the agents and :meth:`BrokerIdentities.grant` declare it alike.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit, urlunsplit

if TYPE_CHECKING:
    from http.client import HTTPConnection

from murano_engine.messaging.management import (
    ManagementApi,
    agents_broker,
    management_url,
    name,
)

LOG = logging.getLogger(__name__)

#: Every server's broker user is named with this prefix (and only those are revoked).
USER_PREFIX = "murano-agent-"
#: The policy bounding the results queues of the agents' virtual host, and its priority
#: (the policy of highest priority matching a queue is the one it has).
RESULTS_POLICY = "murano-results"
RESULTS_POLICY_PRIORITY = 10


@dataclass(frozen=True)
class ServerLimits:
    """What each server's broker user may hold at once, and how much its environment's
    results queue may hold unread; 0 is no limit."""

    max_connections: int = 4
    max_channels: int = 64
    results_max_length: int = 1000
    results_max_bytes: int = 64 << 20

    @classmethod
    def from_config(cls, rabbit: Mapping[str, Any]) -> ServerLimits:
        """From ``[rabbitmq]`` (``server_max_connections``, ``server_max_channels``,
        ``results_max_length``, ``results_max_bytes``)."""
        default = cls()
        return cls(
            int(rabbit.get("server_max_connections", default.max_connections)),
            int(rabbit.get("server_max_channels", default.max_channels)),
            int(rabbit.get("results_max_length", default.results_max_length)),
            int(rabbit.get("results_max_bytes", default.results_max_bytes)))

    def user_limits(self) -> dict[str, int]:
        """RabbitMQ's user limits of a server's user (those that are set)."""
        return {name: value for name, value in (("max-connections", self.max_connections),
                                                ("max-channels", self.max_channels))
                if value}

    def results_definition(self) -> dict[str, Any]:
        """The definition of :data:`RESULTS_POLICY` ({} when it bounds nothing)."""
        bounds = {name: value for name, value in (("max-length", self.results_max_length),
                                                  ("max-length-bytes",
                                                   self.results_max_bytes))
                  if value}
        return {**bounds, "overflow": "reject-publish"} if bounds else {}


DEFAULT_LIMITS = ServerLimits()


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


def result_exchange_name(result_queue: str) -> str:
    """The exchange agents publish results to, bound to ``result_queue`` alone:
    ``<result queue>-exchange``."""
    return f"{result_queue}-exchange"


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
    """Mints and revokes servers' broker users in ``virtual_host`` through ``api``, each
    within ``limits``."""

    def __init__(self, api: ManagementApi, virtual_host: str = "/",
                 limits: ServerLimits = DEFAULT_LIMITS) -> None:
        self.api = api
        self.virtual_host = virtual_host
        self.limits = limits
        #: what this object granted and has not revoked: queue -> (result queue, password)
        self._granted: dict[str, tuple[str, str]] = {}
        self._results_bounded = False  # RESULTS_POLICY set by this object

    @classmethod
    def from_config(cls, config: Mapping[str, Mapping[str, Any]]) -> BrokerIdentities | None:
        """From ``[rabbitmq]``; None when servers share the engine's login
        (``server_identities`` off, or a broker that is not RabbitMQ, as ``memory://``)."""
        broker, url = agents_broker(config), management_url(config)
        if not config["rabbitmq"].get("server_identities", True) or broker is None \
                or url is None:
            return None
        return cls(ManagementApi(url), broker[1], ServerLimits.from_config(config["rabbitmq"]))

    # -- what the engine calls -----------------------------------------------------------

    def mint(self, queue: str, result_queue: str) -> BrokerIdentity:
        """A new user for the agent consuming ``queue`` (a new password if it exists),
        publishing to the result exchange of ``result_queue`` (made and bound here)."""
        return self.grant(queue, result_queue, secrets.token_urlsafe(24))

    def grant(self, queue: str, result_queue: str, password: str) -> BrokerIdentity:
        """The user of the agent consuming ``queue``, with ``password``, its rights and
        :attr:`limits`, made (or made again) as :meth:`mint` makes it."""
        from murano_common.amqp import QUEUE_ARGUMENTS  # kombu: only once a server is made

        exchange = result_exchange_name(result_queue)
        vhost = name(self.virtual_host)
        login = identity_name(queue)
        with self.api.session() as conn:
            if not self._results_bounded:
                self._bound_results(conn)
            self.api.send(conn, "PUT", f"/api/exchanges/{vhost}/{name(exchange)}",
                          {"type": "direct", "durable": True, "auto_delete": False})
            self.api.send(conn, "PUT", f"/api/queues/{vhost}/{name(result_queue)}",
                          {"durable": True, "auto_delete": False,
                           "arguments": QUEUE_ARGUMENTS})
            self.api.send(conn, "POST", f"/api/bindings/{vhost}/e/{name(exchange)}"
                                        f"/q/{name(result_queue)}",
                          {"routing_key": result_queue})
            self.api.send(conn, "PUT", f"/api/users/{name(login)}",
                          {"password": password, "tags": ""})
            self.api.send(conn, "PUT", f"/api/permissions/{vhost}/{name(login)}",
                          {"configure": _exact(queue), "write": _exact(exchange),
                           "read": _exact(queue)})
            for limit, value in self.limits.user_limits().items():
                self.api.send(conn, "PUT", f"/api/user-limits/{name(login)}/{limit}",
                              {"value": value})
        self._granted[queue] = (result_queue, password)
        LOG.debug("broker user %s made for queue %s", login, queue)
        return BrokerIdentity(login, password, self.virtual_host, exchange)

    def _bound_results(self, conn: HTTPConnection) -> None:
        """Set :data:`RESULTS_POLICY` on the virtual host: every results queue (named
        ``-execution-results-...``) is bounded by :attr:`limits`."""
        from murano_common.queue_names import result_queue_name

        definition = self.limits.results_definition()
        if definition:
            self.api.send(conn, "PUT", f"/api/policies/{name(self.virtual_host)}/"
                                       f"{name(RESULTS_POLICY)}",
                          {"pattern": f"^{re.escape(result_queue_name(''))}",
                           "definition": definition, "priority": RESULTS_POLICY_PRIORITY,
                           "apply-to": "queues"})
        self._results_bounded = True

    def granted(self, queue: str, result_queue: str, password: str) -> bool:
        """Whether this object made the user of ``queue`` with ``password`` and these
        rights, and has not revoked it since (so a :meth:`grant` would change nothing)."""
        return self._granted.get(queue) == (result_queue, password)

    def revoke(self, queue: str) -> bool:
        """Delete the user of the agent consuming ``queue`` (its connections close with
        it), then the queue; False when there was no such user."""
        login = identity_name(queue)
        self._granted.pop(queue, None)
        with self.api.session() as conn:
            gone = self.api.send(conn, "DELETE", f"/api/users/{name(login)}",
                                 missing_ok=True) is not None
            self.api.send(conn, "DELETE",
                          f"/api/queues/{name(self.virtual_host)}/{name(queue)}",
                          missing_ok=True)
        if gone:
            LOG.debug("broker user %s revoked", login)
        return gone

    def remove_exchange(self, result_queue: str) -> bool:
        """Delete the result exchange of ``result_queue``; False when there was none."""
        exchange = name(result_exchange_name(result_queue))
        return self.api.request("DELETE", f"/api/exchanges/{name(self.virtual_host)}/{exchange}",
                                missing_ok=True) is not None

    def users(self) -> list[str]:
        """The names of every server user the broker has now."""
        listing = self.api.request("GET", "/api/users?columns=name")
        return sorted(u["name"] for u in listing if str(u["name"]).startswith(USER_PREFIX))
