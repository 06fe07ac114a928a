"""A TCP forwarder on loopback that a test can cut and restore: network faults without
touching the service behind it (for instance the machine's RabbitMQ).

    with TcpForwarder(5672) as forwarder:
        url = forwarder.rewrite("amqp://guest:guest@127.0.0.1:5672//")
        ...                 # clients connect through forwarder.port
        forwarder.hold()    # optional: open connections stop passing the target's bytes on
        forwarder.cut()     # every open connection is reset at both ends; new ones too
        forwarder.restore() # new connections are forwarded again

One thread serves every connection (a selector over non-blocking sockets), so
a cut happens in that thread, between two reads, and never under a reader.
"""

from __future__ import annotations

import queue
import selectors
import socket
import struct
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

#: Bytes read at once, and bytes held for a slow side before reading from the other stops.
CHUNK, MAX_HELD = 65536, 4 << 20
#: Seconds the serving loop sleeps in one wait (bounds how late it notices close()).
POLL = 0.2
#: Seconds to reach the target, and to hand a closing side's last bytes to the other.
CONNECT_TIMEOUT = FLUSH_TIMEOUT = 2.0
READ, WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE


def _reset(sock: socket.socket) -> None:
    """Close ``sock`` abruptly: the peer gets a TCP reset, not an orderly end."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


class _Link:
    """One forwarded connection: the accepted socket and the one to the target, with the
    bytes read from each and not yet written to the other."""

    def __init__(self, accepted: socket.socket, upstream: socket.socket) -> None:
        self.ends = (accepted, upstream)
        self.held = {accepted: bytearray(), upstream: bytearray()}  # to be written to it
        self.frozen = False  # the target's bytes are left unread (see TcpForwarder.hold)

    def peer(self, sock: socket.socket) -> socket.socket:
        return self.ends[1] if sock is self.ends[0] else self.ends[0]


class TcpForwarder:
    """Listens on ``127.0.0.1:<free port>`` and forwards each connection to
    ``target_host:target_port``; :meth:`cut` and :meth:`restore` fake a network fault."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self._server = socket.create_server(("127.0.0.1", 0), backlog=128)
        self._server.setblocking(False)
        self.port: int = self._server.getsockname()[1]
        #: Connections forwarded since start, and connections reset because of a cut.
        self.forwarded = self.refused = 0
        self._cut = threading.Event()
        self._stopping = threading.Event()
        self._links: set[_Link] = set()
        self._lock = threading.Lock()  # _links and the counters, read by other threads
        self._commands: queue.Queue[tuple[Callable[[], Any], queue.Queue[Any]]] = queue.Queue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._server, READ, self._accept)
        self._selector.register(self._wake_r, READ, self._wake)
        self._thread = threading.Thread(target=self._serve, name=f"forwarder :{self.port}",
                                        daemon=True)
        self._thread.start()

    # -- the test's side -----------------------------------------------------------------

    def rewrite(self, url: str) -> str:
        """``url`` with its host and port replaced by the forwarder's."""
        parts = urllib.parse.urlsplit(url)
        credentials = parts.netloc.rpartition("@")[0]
        netloc = f"{credentials}@" if credentials else ""
        return urllib.parse.urlunsplit(parts._replace(netloc=f"{netloc}127.0.0.1:{self.port}"))

    @property
    def links(self) -> int:
        """Connections open through the forwarder now."""
        with self._lock:
            return len(self._links)

    @property
    def is_cut(self) -> bool:
        return self._cut.is_set()

    def cut(self) -> int:
        """Reset every open connection at both ends, and each new one until
        :meth:`restore`; returns how many were open."""
        self._cut.set()
        return self._in_loop(self._reset_all)

    def restore(self) -> None:
        """Forward new connections again."""
        self._cut.clear()

    def hold(self) -> int:
        """Stop reading what the target sends on the connections open now (the target
        takes it as sent; the client never sees it); returns how many were open. Such
        connections stay so until they end or are cut."""
        return self._in_loop(self._freeze_all)

    def wait_links(self, count: int, timeout: float = 10.0) -> float:
        """Wait until exactly ``count`` connections are open; returns the seconds it took."""
        started = time.monotonic()
        while self.links != count:
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"{self.links} of {count} connections open after {timeout} s")
            time.sleep(0.01)
        return time.monotonic() - started

    def close(self) -> None:
        """Stop serving; connections still open are reset. Safe to call twice."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._wake_thread()
        self._thread.join(10)
        self._wake_w.close()

    def __enter__(self) -> TcpForwarder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _in_loop(self, function: Callable[[], Any]) -> Any:
        """Run ``function`` in the serving thread and return what it returned."""
        if self._stopping.is_set():
            raise RuntimeError("the forwarder is closed")
        answer: queue.Queue[Any] = queue.Queue()
        self._commands.put((function, answer))
        self._wake_thread()
        outcome = answer.get(timeout=10)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def _wake_thread(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:  # the serving thread has ended: nothing to wake
            pass

    # -- the serving thread --------------------------------------------------------------

    def _serve(self) -> None:
        try:
            while not self._stopping.is_set():
                for key, events in self._selector.select(POLL):
                    key.data(key.fileobj, events)
                while not self._commands.empty():
                    function, answer = self._commands.get()
                    try:
                        answer.put(function())
                    except Exception as error:  # raised again in the test's thread
                        answer.put(error)
        finally:
            self._reset_all()
            self._selector.close()
            self._server.close()
            self._wake_r.close()

    def _wake(self, sock: socket.socket, events: int) -> None:
        try:
            sock.recv(CHUNK)
        except BlockingIOError:
            pass

    def _accept(self, server: socket.socket, events: int) -> None:
        try:
            accepted, _ = server.accept()
        except OSError:  # none waiting, or the client gave up before it was accepted
            return
        if self._cut.is_set():
            with self._lock:
                self.refused += 1
            _reset(accepted)
            return
        try:
            upstream = socket.create_connection(self.target, timeout=CONNECT_TIMEOUT)
        except OSError:
            _reset(accepted)
            return
        link = _Link(accepted, upstream)
        try:
            for sock in link.ends:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # a side ended already: as a reset would
            for sock in link.ends:
                _reset(sock)
            return
        for sock in link.ends:
            self._selector.register(sock, READ, self._make_handler(link))
        with self._lock:
            self._links.add(link)
            self.forwarded += 1

    def _make_handler(self, link: _Link) -> Callable[[socket.socket, int], None]:
        return lambda sock, events: self._pump(link, sock, events)

    def _pump(self, link: _Link, sock: socket.socket, events: int) -> None:
        if link not in self._links:
            return  # closed earlier in this round of events
        peer = link.peer(sock)
        if events & READ:
            try:
                data = sock.recv(CHUNK)
            except BlockingIOError:
                data = None
            except OSError:
                data = b""
            if data == b"":  # this side ended: the other gets what is left, then ends too
                self._close(link, flush_to=peer)
                return
            if data:
                link.held[peer] += data
                if not self._write(link, peer):
                    return
        if events & WRITE and not self._write(link, sock):
            return
        self._watch(link)

    def _write(self, link: _Link, sock: socket.socket) -> bool:
        """Write what is held for ``sock``; False when that side is gone (link closed)."""
        held = link.held[sock]
        if not held:
            return True
        try:
            sent = sock.send(held)
        except BlockingIOError:
            return True
        except OSError:
            self._close(link)
            return False
        del held[:sent]
        return True

    def _watch(self, link: _Link) -> None:
        """Read from a side only while the other's backlog is small; watch writability
        only while bytes are held for it."""
        for sock in link.ends:
            readable = not (link.frozen and sock is link.ends[1])
            mask = (READ if readable and len(link.held[link.peer(sock)]) < MAX_HELD else 0) | (
                WRITE if link.held[sock] else 0
            )
            registered = self._selector.get_map().get(sock)
            if registered is None and mask:
                self._selector.register(sock, mask, self._make_handler(link))
            elif registered is not None and not mask:
                self._selector.unregister(sock)
            elif registered is not None and registered.events != mask:
                self._selector.modify(sock, mask, registered.data)

    def _close(self, link: _Link, flush_to: socket.socket | None = None) -> None:
        """End a link: orderly after handing ``flush_to`` its last bytes, else reset."""
        with self._lock:
            self._links.discard(link)
        for sock in link.ends:
            if sock in self._selector.get_map():
                self._selector.unregister(sock)
        if flush_to is None:
            for sock in link.ends:
                _reset(sock)
            return
        try:
            flush_to.settimeout(FLUSH_TIMEOUT)
            flush_to.sendall(link.held[flush_to])
        except OSError:
            pass
        for sock in link.ends:
            sock.close()

    def _freeze_all(self) -> int:
        with self._lock:
            links = list(self._links)
        for link in links:
            link.frozen = True
            self._watch(link)
        return len(links)

    def _reset_all(self) -> int:
        with self._lock:
            links = list(self._links)
        for link in links:
            self._close(link)
        return len(links)
