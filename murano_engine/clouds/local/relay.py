"""A TCP relay: what a sandboxed server's agent uses to reach the engine's broker.

The server's namespace has no route to the host, so its agent connects to
``127.0.0.1:<port>`` inside it, where the engine listens (see
:func:`.netns.listening_socket`) and forwards each connection to the broker.
Only the broker's address is reachable this way.
"""

from __future__ import annotations

import logging
import socket
import threading

LOG = logging.getLogger(__name__)
CHUNK = 65536
ACCEPT_POLL = 0.2
JOIN_TIMEOUT = 2.0


class Relay:
    """Accepts on ``listener`` and pipes each connection to ``target`` (host, port)."""

    def __init__(self, listener: socket.socket, target: tuple[str, int], name: str) -> None:
        self.listener = listener
        self.target = target
        self.name = name
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
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
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in list(self._threads):
            if thread is not threading.current_thread():
                thread.join(JOIN_TIMEOUT)

    def _accept(self) -> None:
        self.listener.settimeout(ACCEPT_POLL)
        while True:
            with self._lock:
                if self._closed:
                    self.listener.close()
                    return
            try:
                inner, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                self.listener.close()
                return
            inner.settimeout(None)
            try:
                outer = socket.create_connection(self.target, timeout=10)
                outer.settimeout(None)
            except OSError as exc:
                LOG.warning("relay %s: the broker %s:%s is unreachable: %s",
                            self.name, *self.target, exc)
                _shut(inner)
                continue
            with self._lock:
                if self._closed:
                    _shut(inner)
                    _shut(outer)
                    self.listener.close()
                    return
                self._open.update((inner, outer))
            for source, sink in ((inner, outer), (outer, inner)):
                pump = threading.Thread(target=self._pump, args=(source, sink), daemon=True,
                                        name=f"relay {self.name}")
                with self._lock:
                    self._threads = [t for t in self._threads if t.is_alive()] + [pump]
                pump.start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
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


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
