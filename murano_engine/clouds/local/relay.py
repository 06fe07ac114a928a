"""A TCP relay: what a sandboxed server's agent uses to reach the engine's broker.

The server's namespace has no route to the host, so its agent connects to
``127.0.0.1:<port>`` inside it, where the engine listens (see
:func:`.netns.listening_socket`) and forwards each connection to the broker.
Only the broker's address is reachable this way, and only as the server's own
broker user: the relay connects from the host's loopback, from where RabbitMQ
would let in any user, ``guest`` included, so it reads the client's AMQP 0-9-1
login (:func:`parse_login`) before it opens a socket to the broker, answering the
client's protocol header with a Connection.Start of its own (the broker's last,
:data:`STAND_IN_START` until one was seen), and cuts the connection unless the
login is the one allowed. The login goes on unchanged: the broker still checks
the password.

What one guest may take is bounded (:class:`RelayLimits`): connections at once
(past them one is closed as soon as it is accepted) and AMQP channels on each
(the relay lowers ``channel_max`` in the broker's Connection.Tune and in the
client's Connection.TuneOk, so the broker refuses a channel past it).

Connections cost no thread: every relay of a cloud is served by one
:class:`RelayLoop`, a thread waiting on one epoll for all their sockets (issue 47:
a thread per server and per connection kept murano-api from deploying five
servers under an 8 GiB address-space limit). Whatever a connection waits for in
its handshake has a deadline; nothing blocks the loop but a name lookup of the
broker's host.
"""

from __future__ import annotations

import errno
import heapq
import logging
import os
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from murano_common.amqp import Outage

LOG = logging.getLogger(__name__)
CHUNK = 65536
JOIN_TIMEOUT = 2.0
PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
#: The most bytes a client may send before its login is known.
MAX_HANDSHAKE = 65536
#: The most seconds a client may take to send its login (and, later, its TuneOk).
HANDSHAKE_TIMEOUT = 10.0
#: The most seconds the broker may take to answer in a connection's handshake.
BROKER_TIMEOUT = 10.0
#: Connections a server's relay holds at once, and channels each may have open.
DEFAULT_MAX_CONNECTIONS = 4
DEFAULT_MAX_CHANNELS = 16
#: Seconds the relay waits before accepting again after the system refused it a
#: descriptor or memory for a new connection (which stays in the backlog meanwhile).
ACCEPT_PAUSE = 0.1
_SHORT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_METHOD_FRAME = 1
_FRAME_END = 0xCE
_FRAME_HEADER = 7  # type, channel, size
# Connection methods: (class 10, method)
_START, _START_OK, _TUNE, _TUNE_OK = (10, 10), (10, 11), (10, 30), (10, 31)
_CHANNEL_MAX_AT = _FRAME_HEADER + 4  # in Tune and TuneOk, after class and method


class HandshakeRefused(ValueError):
    """The client's handshake is not one the relay lets through."""


@dataclass(frozen=True)
class RelayLimits:
    """What a server's relay lets its guest hold: ``connections`` at once (0: no limit),
    each with at most ``channels`` AMQP channels open (0: as many as the broker allows)."""

    connections: int = DEFAULT_MAX_CONNECTIONS
    channels: int = DEFAULT_MAX_CHANNELS


DEFAULT_LIMITS = RelayLimits()


@dataclass(frozen=True)
class Login:
    """The login of a client's Connection.StartOk."""

    mechanism: str
    user: str


def parse_login(data: bytes) -> Login | None:
    """The login in the first bytes ``data`` a client sent, or None while more are needed.

    ``data`` must hold the AMQP 0-9-1 protocol header then a Connection.StartOk
    method frame on channel 0, whose mechanism is PLAIN (response
    ``[authzid]\\0user\\0password``, the authzid empty or the user) or AMQPLAIN
    (response: field-table entries, LOGIN a long string). Raises
    :class:`HandshakeRefused` for anything else, or when the frame would pass
    :data:`MAX_HANDSHAKE` bytes.
    """
    if PROTOCOL_HEADER[:len(data)] != data[:len(PROTOCOL_HEADER)]:
        raise HandshakeRefused("not the AMQP 0-9-1 protocol header")
    header_end = len(PROTOCOL_HEADER) + 7
    if len(data) < header_end:
        return None
    kind, channel, size = struct.unpack_from(">BHI", data, len(PROTOCOL_HEADER))
    if kind != _METHOD_FRAME or channel != 0:
        raise HandshakeRefused(f"frame type {kind} on channel {channel} before the login")
    end = header_end + size + 1
    if end > MAX_HANDSHAKE:
        raise HandshakeRefused(f"a {size}-byte login frame (a handshake may take at most "
                               f"{MAX_HANDSHAKE} bytes)")
    if len(data) < end:
        return None
    if data[end - 1] != _FRAME_END:
        raise HandshakeRefused("the login frame does not end with the frame-end octet")
    reader = _Reader(data[header_end:end - 1])
    if (reader.unpack(">H"), reader.unpack(">H")) != _START_OK:
        raise HandshakeRefused("the first method is not Connection.StartOk")
    reader.take(reader.unpack(">I"))  # client properties
    mechanism = reader.shortstr().decode("utf-8", "replace")
    response = reader.take(reader.unpack(">I"))
    reader.shortstr()  # locale
    if reader.left:
        raise HandshakeRefused("bytes after the locale in Connection.StartOk")
    if mechanism == "PLAIN":
        user = _plain_user(response)
    elif mechanism == "AMQPLAIN":
        user = _amqplain_user(response)
    else:
        raise HandshakeRefused(f"mechanism {mechanism!r} (only PLAIN and AMQPLAIN)")
    return Login(mechanism, user)


def _plain_user(response: bytes) -> str:
    parts = response.split(b"\0")
    if len(parts) != 3 or parts[0] not in (b"", parts[1]):
        raise HandshakeRefused("a PLAIN response other than [authzid]\\0user\\0password "
                               "with the authzid empty or the user")
    return _text(parts[1])


def _amqplain_user(response: bytes) -> str:
    reader = _Reader(response)
    users = []
    while reader.left:
        name = reader.shortstr()
        if reader.take(1) != b"S":
            raise HandshakeRefused(f"AMQPLAIN field {_text(name)!r} is not a long string")
        value = reader.take(reader.unpack(">I"))
        if name == b"LOGIN":
            users.append(value)
    if len(users) != 1:
        raise HandshakeRefused(f"{len(users)} LOGIN fields in the AMQPLAIN response")
    return _text(users[0])


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise HandshakeRefused(f"a user name that is not UTF-8: {raw!r}") from None


class _Reader:
    """Reads a byte string front to back; running past its end is a refusal."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    @property
    def left(self) -> int:
        return len(self.data) - self.at

    def take(self, count: int) -> bytes:
        if count > self.left:
            raise HandshakeRefused("a field runs past the end of its frame")
        self.at += count
        return self.data[self.at - count:self.at]

    def unpack(self, layout: str) -> int:
        return struct.unpack(layout, self.take(struct.calcsize(layout)))[0]

    def shortstr(self) -> bytes:
        return self.take(self.unpack(">B"))


def _long(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _field_table(fields: Mapping[str, bool | str | Mapping[str, bool]]) -> bytes:
    """An AMQP field table of booleans, long strings and tables."""
    encoded = b""
    for key, value in fields.items():
        encoded += bytes([len(key)]) + key.encode()
        if isinstance(value, bool):
            encoded += b"t" + bytes([value])
        elif isinstance(value, Mapping):
            encoded += b"F" + _long(_field_table(value))
        else:
            encoded += b"S" + _long(value.encode())
    return encoded


def _connection_frame(method: tuple[int, int], arguments: bytes) -> bytes:
    """A method frame on channel 0."""
    payload = struct.pack(">HH", *method) + arguments
    return struct.pack(">BHI", _METHOD_FRAME, 0, len(payload)) + payload + bytes([_FRAME_END])


#: The Connection.Start a client gets before the relay has seen its broker's: RabbitMQ's
#: own capabilities, which the client's StartOk answers with its own.
STAND_IN_START = _connection_frame(_START, bytes([0, 9]) + _long(_field_table({
    "capabilities": dict.fromkeys(
        ("publisher_confirms", "exchange_exchange_bindings", "basic.nack",
         "consumer_cancel_notify", "connection.blocked", "consumer_priorities",
         "authentication_failure_close", "per_consumer_qos", "direct_reply_to"), True),
    "product": "RabbitMQ",
    "information": "through the murano-engine sandbox relay",
})) + _long(b"PLAIN AMQPLAIN") + _long(b"en_US"))
#: The Connection.Start each broker (host, port) last sent a relay, given to the next
#: clients before their login is known.
_broker_starts: dict[tuple[str, int], bytes] = {}


def _take_frame(buffer: bytearray) -> bytes | None:
    """The whole frame at the start of ``buffer``, taken out of it; None while more bytes
    are needed. A frame past :data:`MAX_HANDSHAKE` bytes, or not ending with the frame-end
    octet, is refused."""
    if len(buffer) < _FRAME_HEADER:
        return None
    end = _FRAME_HEADER + struct.unpack_from(">I", buffer, 3)[0] + 1
    if end > MAX_HANDSHAKE:
        raise HandshakeRefused(f"a {end}-byte frame in the handshake (at most {MAX_HANDSHAKE})")
    if len(buffer) < end:
        return None
    frame = bytes(buffer[:end])
    del buffer[:end]
    if frame[-1] != _FRAME_END:
        raise HandshakeRefused("a frame in the handshake does not end with the frame-end octet")
    return frame


def _connection_method(frame: bytes) -> tuple[int, int] | None:
    """The class and method of a method frame on channel 0 (None for any other frame)."""
    kind, channel, size = struct.unpack_from(">BHI", frame)
    if kind != _METHOD_FRAME or channel != 0 or size < 4:
        return None
    return struct.unpack_from(">HH", frame, _FRAME_HEADER)


def _with_channel_max(frame: bytes, most: int) -> bytes:
    """A Connection.Tune or TuneOk frame whose ``channel_max`` is at most ``most`` (0, as
    ``most`` or in the frame, is no limit)."""
    if not most or len(frame) < _CHANNEL_MAX_AT + 2:
        return frame
    said = struct.unpack_from(">H", frame, _CHANNEL_MAX_AT)[0]
    lowered = bytearray(frame)
    struct.pack_into(">H", lowered, _CHANNEL_MAX_AT, min(said, most) if said else most)
    return bytes(lowered)


def _login_length(data: bytes) -> int:
    """How many bytes of ``data`` (the protocol header and a whole StartOk frame, as
    :func:`parse_login` took them) the login takes."""
    size = struct.unpack_from(">I", data, len(PROTOCOL_HEADER) + 3)[0]
    return len(PROTOCOL_HEADER) + _FRAME_HEADER + size + 1


class _ClientGone(Exception):
    """The client ended its connection in the handshake."""


def _epoll() -> Any:
    """A real epoll object: eventlet's monkey-patching removes ``select.epoll`` (its
    green select would register every descriptor with its hub at each call)."""
    if hasattr(select, "epoll"):
        return select.epoll()
    from murano_engine.dsl import concurrency
    return concurrency.unpatched("select").epoll()


class _Timer:
    """A call :class:`RelayLoop` makes at ``when`` unless cancelled first."""

    __slots__ = ("when", "call", "cancelled")

    def __init__(self, when: float, call: Callable[[], None]) -> None:
        self.when, self.call, self.cancelled = when, call, False

    def __lt__(self, other: _Timer) -> bool:
        return self.when < other.when


class RelayLoop:
    """One thread serving every connection of the relays made on it, through one epoll.

    A relay's connections cost the engine no thread of their own, whatever their
    number: the loop's thread (a green one in a process eventlet patched, where it waits
    on the epoll's descriptor) is started with the first relay and ends at
    :meth:`close`. Everything but :meth:`call` and :meth:`call_and_wait` runs in the
    loop's thread.
    """

    def __init__(self, name: str = "relays") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._calls: list[Callable[[], None]] = []
        self._thread: threading.Thread | None = None
        self._epoll: Any = None
        self._wake = -1  # an eventfd: written to make the loop look at its calls
        self._handlers: dict[int, Callable[[int], None]] = {}
        self._watched: dict[int, int] = {}  # descriptor: epoll events
        self._timers: list[_Timer] = []
        self._stopping = False

    @property
    def threads(self) -> int:
        """Threads the loop holds: 1 while it runs, else 0."""
        thread = self._thread
        return int(thread is not None and thread.is_alive())

    def call(self, work: Callable[[], None]) -> None:
        """Have the loop's thread run ``work`` soon (starting the thread if need be:
        RuntimeError when it cannot be started, ``work`` then is not run)."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._start()
            self._calls.append(work)
        os.eventfd_write(self._wake, 1)

    def call_and_wait(self, work: Callable[[], None], timeout: float) -> bool:
        """Run ``work`` in the loop's thread and wait for its end, at most ``timeout``
        seconds; whether it ended. Run at once when called from the loop's thread."""
        if threading.current_thread() is self._thread:
            work()
            return True
        done = threading.Event()

        def run_then_say() -> None:
            try:
                work()
            finally:
                done.set()
        self.call(run_then_say)
        return done.wait(timeout)

    def close(self) -> None:
        """Stop the loop's thread (the relays on it are closed first by their owner)."""
        with self._lock:
            thread, self._stopping = self._thread, True
        if thread is not None and thread.is_alive():
            os.eventfd_write(self._wake, 1)
            if thread is not threading.current_thread():
                thread.join(JOIN_TIMEOUT)

    def _start(self) -> None:
        """Make the epoll and the thread (with :attr:`_lock` held)."""
        if self._epoll is None:
            self._epoll = _epoll()
            self._wake = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
            self._epoll.register(self._wake, select.EPOLLIN)
        self._stopping = False
        thread = threading.Thread(target=self._run, name=f"relay loop {self.name}",
                                  daemon=True)
        thread.start()  # RuntimeError: no thread for it (it is asked again next time)
        self._thread = thread

    # In the loop's thread.

    def watch(self, fd: int, events: int, handler: Callable[[int], None]) -> None:
        """Call ``handler(events happened)`` when ``fd`` is ready for ``events`` (epoll
        flags; none: no longer watched)."""
        was = self._watched.get(fd)
        if not events:
            if was is not None:
                del self._watched[fd], self._handlers[fd]
                self._epoll.unregister(fd)
            return
        self._handlers[fd] = handler
        if was is None:
            self._epoll.register(fd, events)
        elif was != events:
            self._epoll.modify(fd, events)
        self._watched[fd] = events

    def later(self, delay: float, call: Callable[[], None]) -> _Timer:
        """Call ``call`` in ``delay`` seconds (unless the timer is cancelled first)."""
        timer = _Timer(time.monotonic() + delay, call)
        heapq.heappush(self._timers, timer)
        return timer

    def _run(self) -> None:
        green = not hasattr(select, "epoll")  # eventlet's select: wait on the epoll's fd
        while True:
            with self._lock:
                calls, self._calls = self._calls, []
                if self._stopping and not calls:
                    self._thread = None
                    return
            for work in calls:
                self._guarded(work)
            timeout = self._due()
            try:
                if green:
                    select.select([self._epoll.fileno()], [], [], timeout)
                    ready = self._epoll.poll(0)
                else:
                    ready = self._epoll.poll(-1 if timeout is None else timeout)
            except InterruptedError:
                continue
            for fd, events in ready:
                if fd == self._wake:
                    try:
                        os.eventfd_read(self._wake)
                    except BlockingIOError:
                        pass
                    continue
                handler = self._handlers.get(fd)
                if handler is not None:
                    self._guarded(handler, events)

    def _due(self) -> float | None:
        """Make the timers' calls that are due; the seconds until the next one."""
        while self._timers:
            timer = self._timers[0]
            if timer.cancelled:
                heapq.heappop(self._timers)
                continue
            left = timer.when - time.monotonic()
            if left > 0:
                return left
            heapq.heappop(self._timers)
            self._guarded(timer.call)
        return None

    def _guarded(self, work: Callable[..., None], *args: int) -> None:
        try:
            work(*args)
        except Exception:  # noqa: BLE001 - one relay's trouble is its own
            LOG.exception("relay loop %s: a call failed", self.name)


_default_loop: RelayLoop | None = None
_default_lock = threading.Lock()


def default_loop() -> RelayLoop:
    """The process's relay loop, for relays made without one."""
    global _default_loop
    with _default_lock:
        if _default_loop is None:
            _default_loop = RelayLoop("default")
        return _default_loop


_READ, _WRITE = select.EPOLLIN, select.EPOLLOUT
# A connection's phases, in order.
_LOGIN, _CONNECTING, _BROKER_START, _BROKER_LOGIN, _TUNE_OK_PHASE, _PUMP = range(6)


class Relay:
    """Accepts on ``listener`` and pipes each connection to ``target`` (host, port)
    if it logs in to the broker as ``user``, within ``limits``; ``name`` (the server's)
    is for logs. Its connections are served by ``loop`` (the process's
    :func:`default_loop` if none): RuntimeError when the loop has no thread."""

    def __init__(self, listener: socket.socket, target: tuple[str, int], name: str,
                 user: str, limits: RelayLimits = DEFAULT_LIMITS,
                 loop: RelayLoop | None = None) -> None:
        self.listener = listener
        self.target = target
        self.name = name
        self.user = user
        self.limits = limits
        self.loop = loop if loop is not None else default_loop()
        #: both sockets of every connection held (for :meth:`close` to cut)
        self._open: set[socket.socket] = set()
        self._connections = 0
        self._lock = threading.Lock()
        self._served: set[_Connection] = set()
        self._closed = False
        self._refusing = False  # since the last connection admitted or ended
        self._outage = Outage()
        self._short = Outage()  # of descriptors or memory: a warning as it begins
        listener.setblocking(False)
        self.loop.call(self._listen)

    def close(self) -> None:
        """Stop accepting and cut every open connection, their sockets and the listener
        closed (in the loop's thread) by the time it returns; never raises."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            if self.loop.call_and_wait(self._shut_everything, JOIN_TIMEOUT):
                return
            LOG.warning("relay %s: its loop did not close it within %g s", self.name,
                        JOIN_TIMEOUT)
        except RuntimeError:  # its loop has no thread: nothing serves the sockets
            self._shut_everything(watched=False)

    def _shut_everything(self, watched: bool = True) -> None:
        if watched:
            self.loop.watch(self.listener.fileno(), 0, self._accept)
        try:
            self.listener.close()
        except OSError:
            pass
        for connection in list(self._served):
            connection.end(watched)

    def _listen(self) -> None:
        if not self._closed and self.listener.fileno() >= 0:
            self.loop.watch(self.listener.fileno(), _READ, self._accept)

    def _accept(self, events: int) -> None:
        """Take what the listener has to accept (some at a time, the other relays' turn
        coming between). When the system is short of descriptors or memory, the listener
        rests :data:`ACCEPT_PAUSE` seconds (the connection stays in the backlog)."""
        for _ in range(16):
            try:
                client, _ = self.listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if self._closed:
                    return
                if exc.errno not in _SHORT_OF_RESOURCES:
                    LOG.error("relay %s: stopped accepting: %s", self.name, exc)
                    self.loop.watch(self.listener.fileno(), 0, self._accept)
                    return
                (LOG.warning if self._short.begins() else LOG.debug)(
                    "relay %s: cannot accept a connection: %s", self.name, exc)
                self.loop.watch(self.listener.fileno(), 0, self._accept)
                self.loop.later(ACCEPT_PAUSE, self._listen)
                return
            self._short.ends()
            try:
                self._take(client)
            except Exception:  # noqa: BLE001 - one connection's trouble is its own
                LOG.exception("relay %s: a new connection failed", self.name)
                _shut(client)

    def _take(self, client: socket.socket) -> None:
        """Serve a new connection, or refuse it (logged) past the limit."""
        with self._lock:
            most = self.limits.connections
            if self._closed or (most and self._connections >= most):
                refusing, self._refusing = self._refusing, True
                _shut(client)
                if self._closed:
                    return
                if refusing:
                    LOG.debug("relay %s: refused one more connection past %d", self.name, most)
                else:
                    LOG.warning("relay %s: refused a connection: it holds %d, its most (the "
                                "next ones are refused too until one ends)", self.name, most)
                return
            self._connections += 1
            self._open.add(client)
        connection = _Connection(self, client)
        self._served.add(connection)
        connection.begin()

    def _ended(self, connection: _Connection) -> None:
        self._served.discard(connection)
        with self._lock:
            self._open.difference_update(connection.sockets())
            self._connections -= 1
            self._refusing = False

    def _note_unreachable(self, exc: OSError) -> None:
        """An outage is a warning as it starts; the agent's retries in it (one a second)
        are debug lines."""
        if self._outage.begins():
            LOG.warning("relay %s: the broker %s:%s is unreachable: %s", self.name,
                        *self.target, exc)
        else:
            LOG.debug("relay %s: the broker is still unreachable: %s", self.name, exc)

    def _note_reachable(self) -> None:
        length = self._outage.ends()
        if length is not None:
            LOG.info("relay %s: the broker %s:%s answers again, after %.1f s", self.name,
                     *self.target, length)


class _Connection:
    """One relayed connection, in the loop's thread from its accept to its end: the
    client's login read (its protocol header answered with a Connection.Start of the
    relay's own, the broker's last), then a socket to the broker opened, the login sent
    on and the tuning carried across at most the relay's ``channels``; then bytes copied
    both ways. A side that ends has the other's writing end shut once what it sent is
    through, as TCP would."""

    def __init__(self, relay: Relay, client: socket.socket) -> None:
        self.relay = relay
        self.loop = relay.loop
        self.client = client
        self.broker: socket.socket | None = None
        self.phase = _LOGIN
        self.received = bytearray()  # from the client, not yet sent on
        self.from_broker = bytearray()  # from the broker, not yet sent on
        self.to_send: dict[socket.socket, bytearray] = {client: bytearray()}
        self.reading: set[socket.socket] = {client}  # sides not yet ended (pump)
        self.started = False  # the client was sent a Connection.Start
        self.login = b""
        self.timer: _Timer | None = None
        self.over = False

    def sockets(self) -> tuple[socket.socket, ...]:
        return (self.client,) if self.broker is None else (self.client, self.broker)

    def begin(self) -> None:
        self.client.setblocking(False)
        self.client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle's delay
        self._deadline(HANDSHAKE_TIMEOUT, HandshakeRefused(
            f"no login within {HANDSHAKE_TIMEOUT:g} s"))
        self._update()

    def end(self, watched: bool = True) -> None:
        """Close both sockets (no longer watched, unless ``watched`` is False: the loop
        has no thread); the relay forgets the connection."""
        if self.over:
            return
        self.over = True
        if self.timer is not None:
            self.timer.cancelled = True
        for sock in self.sockets():
            if watched and sock.fileno() >= 0:
                self.loop.watch(sock.fileno(), 0, self._on_event)
            _shut(sock)
        self.relay._ended(self)

    def _deadline(self, seconds: float, why: Exception) -> None:
        if self.timer is not None:
            self.timer.cancelled = True

        def past() -> None:
            if not self.over:
                self._fail(why)
        self.timer = self.loop.later(seconds, past)

    def _fail(self, exc: BaseException) -> None:
        """End the connection, saying why as the relay does."""
        relay = self.relay
        if isinstance(exc, HandshakeRefused):
            LOG.warning("relay %s: refused a connection (only user %r may log in): %s",
                        relay.name, relay.user, exc)
        elif isinstance(exc, OSError) and self.phase != _PUMP:
            LOG.info("relay %s: a connection ended in its handshake: %s", relay.name,
                     str(exc) or type(exc).__name__)
        self.end()

    def _on_event(self, events: int) -> None:
        """What the loop calls when a socket of the connection is ready (either: each
        step looks at both)."""
        if self.over:
            return
        try:
            if self.phase == _CONNECTING:
                self._connected()
            self._flush()
            self._read()
            if not self.over:
                self._update()
        except (HandshakeRefused, OSError) as exc:
            self._fail(exc)
        except _ClientGone:
            self.end()

    def _flush(self) -> None:
        """Send what waits for each side; shut its writing end once all is through and
        the other side ended."""
        for sock, waiting in self.to_send.items():
            if not waiting:
                continue
            try:
                del waiting[:sock.send(waiting)]
            except BlockingIOError:
                continue
            if not waiting and self.phase == _PUMP and self._other(sock) not in self.reading:
                sock.shutdown(socket.SHUT_WR)

    def _other(self, sock: socket.socket) -> socket.socket:
        assert self.broker is not None
        return self.broker if sock is self.client else self.client

    def _recv(self, sock: socket.socket) -> bytes | None:
        """What ``sock`` has (b"" once it ended); None when it has nothing yet."""
        try:
            return sock.recv(CHUNK)
        except BlockingIOError:
            return None

    def _received_from_client(self) -> bool:
        """Add what the client sent to :attr:`received`: False when it sent nothing yet;
        :class:`_ClientGone` once it closed."""
        data = self._recv(self.client)
        if data is None:
            return False
        if not data:
            raise _ClientGone
        self.received += data
        return True

    def _read(self) -> None:
        if self.phase == _LOGIN:
            self._read_login()
        elif self.phase in (_BROKER_START, _BROKER_LOGIN):
            self._read_broker()
        elif self.phase == _TUNE_OK_PHASE:
            self._read_tune_ok()
        elif self.phase == _PUMP:
            self._pump()

    def _read_login(self) -> None:
        if not self._received_from_client():
            return
        login = parse_login(bytes(self.received))
        if not self.started and len(self.received) >= len(PROTOCOL_HEADER):
            self._start_client()
        if login is None:
            return
        relay = self.relay
        if login.user != relay.user:
            LOG.warning("relay %s: refused broker user %r (only %r may log in)",
                        relay.name, login.user, relay.user)
            self.end()
            return
        if not self.started:  # sent before the client could have read it: its own affair
            self._start_client()
        length = _login_length(bytes(self.received))
        self.login = bytes(self.received[len(PROTOCOL_HEADER):length])
        del self.received[:length]
        self._connect()

    def _start_client(self) -> None:
        self.to_send[self.client] += _broker_starts.get(self.relay.target, STAND_IN_START)
        self.started = True
        self._flush()

    def _connect(self) -> None:
        """Open a socket to the broker without waiting for it (its end: :meth:`_connected`)."""
        relay = self.relay
        self.phase = _CONNECTING
        self._deadline(BROKER_TIMEOUT, TimeoutError("timed out"))
        try:
            family, kind, proto, _, address = socket.getaddrinfo(
                *relay.target, type=socket.SOCK_STREAM)[0]
            broker = socket.socket(family, kind, proto)
        except OSError as exc:
            relay._note_unreachable(exc)
            self.end()
            return
        broker.setblocking(False)
        self.broker = broker
        self.to_send[broker] = bytearray()
        with relay._lock:
            relay._open.add(broker)
        failed = broker.connect_ex(address)
        if failed not in (0, errno.EINPROGRESS):
            relay._note_unreachable(OSError(failed, os.strerror(failed)))
            self.end()

    def _connected(self) -> None:
        """The broker's socket is writable: connected, or failed to (then logged)."""
        assert self.broker is not None
        failed = self.broker.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if failed in (errno.EINPROGRESS, errno.EALREADY):
            return
        if failed:
            self.relay._note_unreachable(OSError(failed, os.strerror(failed)))
            self.end()
            return
        self.relay._note_reachable()
        self.broker.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.phase = _BROKER_START
        self._deadline(BROKER_TIMEOUT, TimeoutError(
            f"the broker did not answer within {BROKER_TIMEOUT:g} s"))
        self.to_send[self.broker] += PROTOCOL_HEADER

    def _read_broker(self) -> None:
        """The broker's Connection.Start (the client's login goes on), then its answer to
        the login: a Tune goes to the client with ``channel_max`` lowered; anything else
        (a refused login's Close) goes on, and the connection is piped from there."""
        assert self.broker is not None
        data = self._recv(self.broker)
        if data is None:
            return
        self.from_broker += data
        while (frame := _take_frame(self.from_broker)) is not None:
            if self.phase == _BROKER_START:
                if _connection_method(frame) != _START:
                    raise ConnectionError("the broker did not start the connection")
                _broker_starts[self.relay.target] = frame
                self.to_send[self.broker] += self.login
                self.phase = _BROKER_LOGIN
                continue
            tuning = _connection_method(frame) == _TUNE
            self.to_send[self.client] += (
                _with_channel_max(frame, self.relay.limits.channels) if tuning else frame)
            if tuning:
                self.phase = _TUNE_OK_PHASE
                self._deadline(HANDSHAKE_TIMEOUT, HandshakeRefused(
                    f"no Connection.TuneOk within {HANDSHAKE_TIMEOUT:g} s"))
                self._read_tune_ok()
            else:  # the broker refused the login (its Connection.Close goes on)
                self._begin_pump()
            return
        if not data:
            raise ConnectionError("the broker did not start the connection"
                                  if self.phase == _BROKER_START else
                                  "the broker ended the connection at the login")

    def _read_tune_ok(self) -> None:
        tune_ok = _take_frame(self.received)
        if tune_ok is None:
            if not self._received_from_client():
                return
            tune_ok = _take_frame(self.received)
            if tune_ok is None:
                return
        if _connection_method(tune_ok) != _TUNE_OK:
            raise HandshakeRefused("Connection.Tune not answered with Connection.TuneOk")
        assert self.broker is not None
        self.to_send[self.broker] += _with_channel_max(tune_ok, self.relay.limits.channels)
        self._begin_pump()

    def _begin_pump(self) -> None:
        """From here on, bytes go both ways as they come."""
        assert self.broker is not None
        if self.timer is not None:
            self.timer.cancelled = True
            self.timer = None
        self.phase = _PUMP
        self.reading = {self.client, self.broker}
        self.to_send[self.broker] += self.received
        self.to_send[self.client] += self.from_broker
        self.received, self.from_broker = bytearray(), bytearray()
        self._flush()

    def _pump(self) -> None:
        for sock in list(self.reading):
            other = self._other(sock)
            if len(self.to_send[other]) >= CHUNK:
                continue
            data = self._recv(sock)
            if data is None:
                continue
            if data:
                self.to_send[other] += data
                continue
            self.reading.discard(sock)
            if not self.to_send[other]:
                other.shutdown(socket.SHUT_WR)
        self._flush()
        if not self.reading and not any(self.to_send.values()):
            self.end()

    def _update(self) -> None:
        """Watch each socket for what the connection's phase waits for from it."""
        for sock in self.sockets():
            wanted = _WRITE if self.to_send[sock] else 0
            if self.phase == _PUMP:
                if sock in self.reading and len(self.to_send[self._other(sock)]) < CHUNK:
                    wanted |= _READ
            elif sock is self.client:
                if self.phase in (_LOGIN, _TUNE_OK_PHASE):
                    wanted |= _READ
            elif self.phase == _CONNECTING:
                wanted |= _WRITE
            elif self.phase in (_BROKER_START, _BROKER_LOGIN):
                wanted |= _READ
            self.loop.watch(sock.fileno(), wanted, self._on_event)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
