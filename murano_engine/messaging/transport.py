"""The engine's own traffic (API to workers: tasks; workers to API: results and step
reports) on a virtual host apart from the guests'.

``transport_url`` names it. Its virtual host is made on first use, through the
management API of ``[rabbitmq]`` when that reaches the same broker, and the
URL's user is given every right there; guests' broker users
(:mod:`.identities`) have rights only in the agents' virtual host, so they hold
no credentials for it. A ``transport_url`` on the guests' own virtual host is
refused.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from murano_engine.messaging.management import (
    ManagementApi,
    ManagementError,
    agents_broker,
    management_url,
    name,
)

LOG = logging.getLogger(__name__)

#: The virtual host the worker set-up of docs/security.md names (any other works the same way).
DEFAULT_ENGINE_VHOST = "murano-engine"


class TransportError(Exception):
    """``transport_url`` cannot carry the engine's traffic apart from the guests'."""


def transport_vhost(transport_url: str) -> str:
    """The virtual host ``transport_url`` names (``/`` when it names none)."""
    return unquote(urlsplit(transport_url).path[1:]) or "/"


def prepare_transport(transport_url: str, config: Mapping[str, Mapping[str, Any]]) -> None:
    """Refuse a ``transport_url`` on the guests' virtual host (with server identities on);
    make its virtual host, with every right for its user, when the broker lacks it."""
    parts = urlsplit(transport_url)
    vhost = transport_vhost(transport_url)
    guests = agents_broker(config)
    same_broker = guests is not None and guests[0] == (parts.hostname or "localhost")
    if same_broker and guests is not None and guests[1] == vhost \
            and config["rabbitmq"].get("server_identities", True):
        raise TransportError(
            f"transport_url names the virtual host {vhost!r}, where the guest agents' "
            f"broker users live ([rabbitmq] virtual_host); give the engine's traffic one of "
            f"its own, e.g. amqp://{parts.hostname}:{parts.port or 5672}/"
            f"{DEFAULT_ENGINE_VHOST} (it is made on first use)")
    url = management_url(config)
    if not same_broker or url is None:
        return
    api = ManagementApi(url)
    try:
        if api.request("GET", f"/api/vhosts/{name(vhost)}", missing_ok=True) is not None:
            return
        user = unquote(parts.username or "guest")
        with api.session() as conn:
            api.send(conn, "PUT", f"/api/vhosts/{name(vhost)}", {})
            api.send(conn, "PUT", f"/api/permissions/{name(vhost)}/{name(user)}",
                     {"configure": ".*", "write": ".*", "read": ".*"})
    except ManagementError as exc:
        LOG.warning("the engine's virtual host %r could not be checked or made (%s); "
                    "the broker must have it", vhost, exc)
        return
    LOG.info("made the virtual host %r for the engine's traffic (user %s)", vhost, user)
