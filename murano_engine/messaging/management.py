"""RabbitMQ's management HTTP API, with the administrative login of ``[rabbitmq]``.

The engine uses it for what AMQP cannot do: make and remove users, set their
permissions, make virtual hosts (:mod:`.identities`, :mod:`.transport`).
"""

from __future__ import annotations

import base64
import contextlib
import json
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

if TYPE_CHECKING:
    import http.client

#: Seconds one request may take.
REQUEST_TIMEOUT = 10.0
#: The management API's port when ``management_url`` is not configured.
MANAGEMENT_PORT = 15672
#: Requests that change nothing more when sent twice: one the API answers with a server
#: error (5xx) is sent again, up to RETRIES times, RETRY_PAUSE seconds apart (doubling).
#: RabbitMQ answers 500 to a DELETE of a user another request is deleting at the same
#: moment (the engine and the local cloud both revoke a released server's user); sent
#: again, it finds the user gone (404).
IDEMPOTENT = frozenset({"GET", "PUT", "DELETE"})
RETRIES = 3
RETRY_PAUSE = 0.05


class ManagementError(Exception):
    """The management API refused a request or could not be reached."""


def agents_broker(config: Mapping[str, Mapping[str, Any]]) -> tuple[str, str, str, str] | None:
    """Host, virtual host, login and password of the agents' broker (``[rabbitmq]``);
    None when it is not RabbitMQ (``memory://``)."""
    rabbit = config["rabbitmq"]
    url = str(rabbit.get("url") or "")
    if url and not url.startswith(("amqp://", "amqps://", "pyamqp://")):
        return None
    if url:
        parts = urlsplit(url)
        return (parts.hostname or "localhost", unquote(parts.path[1:]) or "/",
                unquote(parts.username or "guest"), unquote(parts.password or "guest"))
    return (str(rabbit["host"]), str(rabbit["virtual_host"]), str(rabbit["login"]),
            str(rabbit["password"]))


def management_url(config: Mapping[str, Mapping[str, Any]]) -> str | None:
    """``[rabbitmq] management_url``, else ``http://<login>:<password>@<host>:15672``
    from the agents' broker settings; None when that broker is not RabbitMQ."""
    configured = str(config["rabbitmq"].get("management_url") or "")
    if configured:
        return configured
    broker = agents_broker(config)
    if broker is None:
        return None
    host, _vhost, login, password = broker
    return f"http://{quote(login, safe='')}:{quote(password, safe='')}@{host}:{MANAGEMENT_PORT}"


class ManagementApi:
    """Requests to the management API at ``url`` (``http(s)://user:password@host:port``)."""

    def __init__(self, url: str, timeout: float = REQUEST_TIMEOUT) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ManagementError(f"[rabbitmq] management_url {url!r} is not an http(s) URL "
                                  "of RabbitMQ's management API")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._base = parts.path.rstrip("/")
        credentials = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        self._auth = "Basic " + base64.b64encode(credentials.encode()).decode("ascii")
        self._timeout = timeout
        self.where = urlunsplit(parts._replace(netloc=f"{self._host}:{self._port}"))

    @contextlib.contextmanager
    def session(self) -> Iterator[http.client.HTTPConnection]:
        """One keep-alive connection for a few :meth:`send` calls."""
        import http.client  # here: a run that reaches no broker (a plan) needs none
        kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = kind(self._host, self._port, timeout=self._timeout)
        try:
            yield conn
        finally:
            conn.close()

    def request(self, method: str, path: str, body: dict[str, Any] | None = None,
                missing_ok: bool = False) -> Any:
        """:meth:`send` on a connection of its own."""
        with self.session() as conn:
            return self.send(conn, method, path, body, missing_ok)

    def send(self, conn: http.client.HTTPConnection, method: str, path: str,
             body: dict[str, Any] | None = None, missing_ok: bool = False) -> Any:
        """The decoded answer (True for an empty one); None for a 404 when ``missing_ok``.

        ``path`` starts with ``/api/``; its names must be quoted (:func:`name`)."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": self._auth, "Content-Type": "application/json"}
        pause = RETRY_PAUSE
        for attempt in range(1 + (RETRIES if method in IDEMPOTENT else 0)):
            if attempt:
                conn.close()  # sent again on a new connection (the next request opens it)
                time.sleep(pause)
                pause *= 2
            status, answer = self._exchange(conn, method, path, data, headers)
            if status < 500:
                break
        if status == 404 and missing_ok:
            return None
        if status >= 300:
            raise ManagementError(f"RabbitMQ's management API at {self.where} answered "
                                  f"{method} {path} with {status}: "
                                  f"{answer[:300].decode('utf-8', 'replace')}")
        return json.loads(answer) if answer else True

    def _exchange(self, conn: http.client.HTTPConnection, method: str, path: str,
                  data: bytes | None, headers: dict[str, str]) -> tuple[int, bytes]:
        """One request and its answer's status and body."""
        try:
            conn.request(method, self._base + path, data, headers)
            response = conn.getresponse()
            return response.status, response.read()
        except OSError as exc:
            raise ManagementError(
                f"RabbitMQ's management API at {self.where} cannot be reached ({exc}); "
                "turn on its management plugin where the broker runs (`rabbitmq-plugins "
                "enable --online rabbitmq_management`; `make broker` does it on this "
                "machine), or set [rabbitmq] management_url"
            ) from None


def name(text: str) -> str:
    """``text`` (a virtual host, user, queue or exchange name) quoted for a path."""
    return quote(text, safe="")
