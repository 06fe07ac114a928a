"""A TCP relay: what a sandboxed server's agent uses to reach the engine's broker.

The server's namespace has no route to the host, so its agent connects to
``127.0.0.1:<port>`` inside it, where the engine listens (see
:func:`.netns.listening_socket`) and forwards each connection to the broker.
Only the broker's address is reachable this way, and only as the server's own
broker user: the relay connects from the host's loopback, from where RabbitMQ
would let in any user, ``guest`` included, so it reads the client's AMQP 0-9-1
handshake as it passes (:func:`parse_login`) and cuts the connection unless its
login is the one allowed. The bytes go through unchanged: the broker still
checks the password.
"""

from __future__ import annotations

import logging
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass

from murano_common.amqp import Outage

LOG = logging.getLogger(__name__)
CHUNK = 65536
JOIN_TIMEOUT = 2.0
PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
#: The most bytes a client may send before its login is known.
MAX_HANDSHAKE = 65536
#: The most seconds a client may take to send its login.
HANDSHAKE_TIMEOUT = 10.0
_METHOD_FRAME = 1
_FRAME_END = 0xCE
_START_OK = (10, 11)  # Connection.StartOk: class 10, method 11


class HandshakeRefused(ValueError):
    """The client's handshake is not one the relay lets through."""


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


class Relay:
    """Accepts on ``listener`` and pipes each connection to ``target`` (host, port)
    if it logs in to the broker as ``user``; ``name`` (the server's) is for logs."""

    def __init__(self, listener: socket.socket, target: tuple[str, int], name: str,
                 user: str) -> None:
        self.listener = listener
        self.target = target
        self.name = name
        self.user = user
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._outage = Outage()
        self._threads = [threading.Thread(target=self._accept, name=f"relay {name}",
                                          daemon=True)]
        self._threads[0].start()

    def close(self) -> None:
        """Stop accepting and cut every open connection.

        Each socket is closed by the thread that reads it (closing one under a
        reader lets its descriptor be reused while the reader still waits on it).
        """
        with self._lock:
            self._closed = True
            sockets = list(self._open)
        try:  # wakes the accepting thread at once (its accept fails)
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in list(self._threads):
            if thread is not threading.current_thread():
                thread.join(JOIN_TIMEOUT)

    def _accept(self) -> None:
        """Accept until :meth:`close` shuts the listener down (no polling: a relay per
        server, each waking up several times a second, would add up)."""
        self.listener.settimeout(None)
        while True:
            with self._lock:
                if self._closed:
                    self.listener.close()
                    return
            try:
                inner, _ = self.listener.accept()
            except OSError:
                self.listener.close()
                return
            inner.settimeout(None)
            try:
                outer = socket.create_connection(self.target, timeout=10)
                outer.settimeout(None)
            except OSError as exc:
                self._note_unreachable(exc)
                _shut(inner)
                continue
            self._note_reachable()
            for sock in (inner, outer):  # each chunk on at once: no Nagle's delay
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                if self._closed:
                    _shut(inner)
                    _shut(outer)
                    self.listener.close()
                    return
                self._open.update((inner, outer))
            for source, sink, gated in ((inner, outer, True), (outer, inner, False)):
                pump = threading.Thread(target=self._pump, args=(source, sink, gated),
                                        daemon=True, name=f"relay {self.name}")
                with self._lock:
                    self._threads = [t for t in self._threads if t.is_alive()] + [pump]
                pump.start()

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

    def _pump(self, source: socket.socket, sink: socket.socket, gated: bool) -> None:
        """Copy ``source`` to ``sink``; when ``gated`` (the client's side), only
        after :meth:`_admit` let its login through."""
        try:
            if gated and not self._admit(source, sink):
                for sock in (source, sink):  # cut both sides at once
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                return
            while True:
                data = source.recv(CHUNK)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            try:
                sink.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            with self._lock:
                self._open.discard(source)
            source.close()

    def _admit(self, client: socket.socket, broker: socket.socket) -> bool:
        """Read the client's handshake, forwarding the protocol header at once and
        the rest once its login is :attr:`user`; False (logged) when it is not."""
        deadline = time.monotonic() + HANDSHAKE_TIMEOUT
        received, sent = b"", 0
        try:
            while (login := parse_login(received)) is None:
                if sent < len(PROTOCOL_HEADER) <= len(received):
                    broker.sendall(received[:len(PROTOCOL_HEADER)])  # the broker answers it
                    sent = len(PROTOCOL_HEADER)
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([client], [], [], remaining)[0]:
                    raise HandshakeRefused(f"no login within {HANDSHAKE_TIMEOUT:g} s")
                data = client.recv(CHUNK)
                if not data:
                    return False  # the client went away before logging in
                received += data
        except HandshakeRefused as exc:
            LOG.warning("relay %s: refused a connection (only user %r may log in): %s",
                        self.name, self.user, exc)
            return False
        if login.user != self.user:
            LOG.warning("relay %s: refused broker user %r (only %r may log in)",
                        self.name, login.user, self.user)
            return False
        broker.sendall(received[sent:])
        return True


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
