"""The API's listening sockets: waitress, with deadlines for slow clients.

waitress reads every request whole before a thread serves it, so slow clients hold
connections, not threads; and it closes a connection idle for ``channel_timeout``. A
client that trickles a byte now and then is never idle, so here each request also has
deadlines: its head must arrive within ``header_timeout`` seconds of its first byte,
its body within ``body_timeout`` seconds of its head. A new connection that sends
nothing has ``header_timeout`` seconds for its first byte: it would otherwise hold one
of the ``connection_limit`` places for ``idle_timeout``, which is for keep-alive
connections between their requests. Past one, the connection is closed (checked every
second).
"""

from __future__ import annotations

import resource
import time
from typing import Any

from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.server import MultiSocketServer, TcpWSGIServer
from waitress.task import ThreadedTaskDispatcher

from murano_engine.backend.settings import Settings

#: file descriptors kept beyond the connection limit (database, broker, packages...)
SPARE_FILES = 256


class DeadlineChannel(HTTPChannel):
    """A connection that notes when the request it is reading began and when its head
    was complete."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reading: Any = None  # the request being read
        self.started = self.head_read = 0.0
        self.opened = time.monotonic()
        self.spoke = False  # whether the client sent anything yet

    def received(self, data: bytes) -> bool:
        self.spoke = self.spoke or bool(data)
        result = super().received(data)
        now, request = time.monotonic(), self.request
        if request is not self.reading:
            self.reading, self.started, self.head_read = request, now, 0.0
        if request is not None and request.headers_finished and not self.head_read:
            self.head_read = now
        return result

    def overdue(self, now: float) -> bool:
        """Whether the request being read missed its head or body deadline, or a new
        connection its first byte's."""
        if not self.spoke:
            return now - self.opened > self.adj.header_timeout
        if self.request is None or self.request is not self.reading:
            return False
        if not self.head_read:
            return now - self.started > self.adj.header_timeout
        return now - self.head_read > self.adj.body_timeout


class GuardedServer(TcpWSGIServer):
    """waitress's TCP server whose channels have read deadlines."""

    channel_class = DeadlineChannel

    def maintenance(self, now: float) -> None:
        super().maintenance(now)
        monotonic = time.monotonic()
        for channel in list(self.active_channels.values()):
            if isinstance(channel, DeadlineChannel) and channel.overdue(monotonic):
                channel.will_close = True


class _Adjustments(Adjustments):
    """waitress's settings plus the two read deadlines."""

    header_timeout = 10.0
    body_timeout = 120.0

    def __init__(self, header_timeout: float, body_timeout: float, **kw: Any) -> None:
        super().__init__(**kw)
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout


def create(app: Any, settings: Settings) -> Any:
    """The server of ``app`` as ``settings`` configure it (``.run()``, ``.close()``)."""
    adj = _Adjustments(
        settings.header_timeout, settings.body_timeout,
        host=settings.bind_host, port=settings.bind_port, threads=settings.api_threads,
        ident="murano-api", connection_limit=settings.connection_limit,
        channel_timeout=max(1, round(settings.idle_timeout)), cleanup_interval=1,
        max_request_header_size=settings.header_size_limit,
        max_request_body_size=settings.package_size_limit + 2 * 1024 * 1024)
    raise_file_limit(settings.connection_limit + SPARE_FILES)
    dispatcher = ThreadedTaskDispatcher()
    dispatcher.set_thread_count(adj.threads)
    socket_map: dict = {}
    servers = [GuardedServer(app, socket_map, dispatcher=dispatcher, adj=adj,
                             sockinfo=sockinfo) for sockinfo in adj.listen]
    if len(servers) == 1:
        return servers[0]
    return MultiSocketServer(socket_map, adj, [(s.effective_host, s.effective_port)
                                               for s in servers], dispatcher,
                             servers[-1].log_info)


def raise_file_limit(wanted: int) -> None:
    """Raise the soft limit of open files to ``wanted`` (at most the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
