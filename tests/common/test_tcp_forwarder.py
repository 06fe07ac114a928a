"""The test helper tcp_forwarder: faithful forwarding, cuts at both ends, restore, close."""

from __future__ import annotations

import hashlib
import os
import socket
import threading

import kombu
import pytest
from agent_harness import AMQP_URL, require_broker
from tcp_forwarder import TcpForwarder


class EchoServer:
    """Echoes every connection's bytes back; notes how each connection ended."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.endings: list[str] = []  # "eof" (orderly) or the error, one per finished connection
        self.ended = threading.Semaphore(0)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    def _echo(self, conn: socket.socket) -> None:
        with conn:
            try:
                while data := conn.recv(65536):
                    conn.sendall(data)
                ending = "eof"
            except ConnectionResetError:
                ending = "reset"
            except OSError as exc:
                ending = repr(exc)
        self.endings.append(ending)
        self.ended.release()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def echo():
    server = EchoServer()
    yield server
    server.close()


@pytest.fixture
def forwarder(echo):
    with TcpForwarder(echo.port) as made:
        yield made


def connect(forwarder: TcpForwarder) -> socket.socket:
    return socket.create_connection(("127.0.0.1", forwarder.port), timeout=5)


def round_trip(sock: socket.socket, data: bytes) -> bytes:
    """Send ``data`` while reading the echo (both at once, so neither side blocks)."""
    sender = threading.Thread(target=sock.sendall, args=(data,))
    sender.start()
    received = bytearray()
    while len(received) < len(data):
        chunk = sock.recv(1 << 20)
        assert chunk, "connection ended early"
        received += chunk
    sender.join()
    return bytes(received)


def assert_reset(sock: socket.socket) -> None:
    """The connection was reset: a read fails (or ends at once) instead of waiting."""
    try:
        assert sock.recv(1) == b""
    except ConnectionResetError:
        pass


def assert_turned_away(forwarder: TcpForwarder) -> None:
    """A new connection is reset (maybe before ``connect`` even returns)."""
    try:
        sock = connect(forwarder)
    except ConnectionResetError:
        return
    with sock:
        assert_reset(sock)


def test_bytes_go_through_unchanged_both_ways(forwarder):
    data = os.urandom(12 << 20)  # more than the forwarder holds for a slow side
    with connect(forwarder) as first, connect(forwarder) as second:
        assert round_trip(first, b"hello") == b"hello"
        echoed = round_trip(second, data)
        assert hashlib.sha256(echoed).digest() == hashlib.sha256(data).digest()
        assert forwarder.links == 2 and forwarder.forwarded == 2


def test_orderly_end_reaches_the_other_side(forwarder, echo):
    with connect(forwarder) as sock:
        assert round_trip(sock, b"x") == b"x"
    forwarder.wait_links(0)
    assert echo.ended.acquire(timeout=10)
    assert echo.endings == ["eof"]


def test_cut_resets_both_ends_and_new_connections_until_restore(forwarder, echo):
    first, second = connect(forwarder), connect(forwarder)
    for sock in (first, second):
        assert round_trip(sock, b"before") == b"before"
    assert forwarder.cut() == 2
    assert forwarder.links == 0 and forwarder.is_cut
    for sock in (first, second):
        assert_reset(sock)
        sock.close()
    assert echo.ended.acquire(timeout=5) and echo.ended.acquire(timeout=5)
    assert echo.endings == ["reset", "reset"]  # the server's side was cut abruptly too

    assert_turned_away(forwarder)  # the port still takes connections, and resets them
    assert forwarder.refused == 1 and forwarder.forwarded == 2

    forwarder.restore()
    with connect(forwarder) as again:
        assert round_trip(again, b"after") == b"after"
    assert forwarder.forwarded == 3


def test_hold_keeps_the_targets_bytes_from_open_connections_only(forwarder):
    with connect(forwarder) as held, connect(forwarder) as idle:
        assert round_trip(held, b"a") == b"a"
        assert forwarder.hold() == 2
        held.sendall(b"b")  # reaches the echo server, whose answer stays in the forwarder
        held.settimeout(0.5)
        with pytest.raises(TimeoutError):
            held.recv(1)
        with connect(forwarder) as fresh:  # a connection made after hold() is not held
            assert round_trip(fresh, b"c") == b"c"
        forwarder.wait_links(2)
        assert forwarder.cut() == 2
        assert_reset(held)
        assert_reset(idle)


def test_close_resets_open_connections_and_stops_listening(echo):
    forwarder = TcpForwarder(echo.port)
    sock = connect(forwarder)
    assert round_trip(sock, b"x") == b"x"
    forwarder.close()
    assert_reset(sock)
    sock.close()
    assert not forwarder._thread.is_alive()
    with pytest.raises(ConnectionRefusedError):
        connect(forwarder)
    forwarder.close()  # twice is fine


def test_clients_resetting_at_once_leave_it_serving(forwarder):
    for _ in range(50):  # each connects and resets at once, while or before it is accepted
        sock = connect(forwarder)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()
    forwarder.wait_links(0)
    with connect(forwarder) as sock:
        assert round_trip(sock, b"still") == b"still"
    assert forwarder._thread.is_alive()


def test_a_failing_command_is_raised_in_the_callers_thread(forwarder):
    def broken() -> None:
        raise LookupError("inside the serving thread")

    with pytest.raises(LookupError, match="inside the serving thread"):
        forwarder._in_loop(broken)
    with connect(forwarder) as sock:  # the serving thread lives on
        assert round_trip(sock, b"y") == b"y"


def test_unreachable_target_resets_the_connection():
    # A port bound but not listening refuses connections, and stays this test's while it is
    # held (a port closed before the test could be taken by another process meanwhile).
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        with TcpForwarder(placeholder.getsockname()[1]) as forwarder:
            assert_turned_away(forwarder)
            assert forwarder.links == 0 and forwarder.forwarded == 0


def test_a_broker_connection_through_it_dies_with_the_cut():
    require_broker()
    with TcpForwarder(5672) as forwarder:
        url = forwarder.rewrite(AMQP_URL)
        assert url == f"amqp://guest:guest@127.0.0.1:{forwarder.port}//"
        with kombu.Connection(url, connect_timeout=3) as conn:
            conn.connect()
            conn.default_channel.queue_declare("", exclusive=True)  # a round trip works
            forwarder.cut()
            with pytest.raises(conn.connection_errors):
                conn.default_channel.queue_declare("", exclusive=True)
        forwarder.restore()
        with kombu.Connection(url, connect_timeout=3) as conn:
            conn.connect()
            assert conn.connected
