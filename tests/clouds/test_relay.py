"""The sandbox broker relay's login gate (issue 21): :func:`parse_login` on
hand-made handshakes, then :class:`Relay` between real AMQP clients and the
real broker on loopback; what one guest may take through it (issue 44)."""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
import uuid

import amqp
import pytest

from murano_engine.clouds.local import relay as relay_module
from murano_engine.clouds.local.relay import (
    DEFAULT_LIMITS,
    MAX_HANDSHAKE,
    PROTOCOL_HEADER,
    HandshakeRefused,
    Login,
    Relay,
    RelayLimits,
    parse_login,
)
from murano_engine.clouds.local.sandbox import (
    NamespaceLauncher,
    SandboxError,
    ServerSpec,
    missing_for_namespaces,
)
from tests.tcp_forwarder import TcpForwarder

BROKER = ("127.0.0.1", 5672)


def _shortstr(text: bytes) -> bytes:
    return bytes([len(text)]) + text


def _longstr(text: bytes) -> bytes:
    return struct.pack(">I", len(text)) + text


def start_ok(mechanism: bytes, response: bytes, *, method: tuple[int, int] = (10, 11),
             channel: int = 0, kind: int = 1, end: bytes = b"\xce",
             tail: bytes = b"") -> bytes:
    """The protocol header and a Connection.StartOk frame as a client sends them."""
    properties = _shortstr(b"product") + b"S" + _longstr(b"test")
    payload = (struct.pack(">HH", *method) + _longstr(properties) + _shortstr(mechanism)
               + _longstr(response) + _shortstr(b"en_US") + tail)
    return PROTOCOL_HEADER + struct.pack(">BHI", kind, channel, len(payload)) + payload + end


def amqplain(**fields: bytes) -> bytes:
    return b"".join(_shortstr(name.encode()) + b"S" + _longstr(value)
                    for name, value in fields.items())


def test_plain_login_is_read():
    assert parse_login(start_ok(b"PLAIN", b"\0alice\0secret")) == Login("PLAIN", "alice")
    with_authzid = start_ok(b"PLAIN", b"alice\0alice\0secret")
    assert parse_login(with_authzid + b"more") == Login("PLAIN", "alice")


def test_amqplain_login_is_read():
    data = start_ok(b"AMQPLAIN", amqplain(LOGIN=b"alice", PASSWORD=b"secret"))
    assert parse_login(data) == Login("AMQPLAIN", "alice")
    reordered = start_ok(b"AMQPLAIN", amqplain(PASSWORD=b"x", LOGIN=b"bob"))
    assert parse_login(reordered).user == "bob"


def test_every_prefix_needs_more_bytes():
    data = start_ok(b"AMQPLAIN", amqplain(LOGIN=b"alice", PASSWORD=b"secret"))
    for cut in range(len(data)):
        assert parse_login(data[:cut]) is None


@pytest.mark.parametrize("data, reason", [
    (b"AMQP\x01\x01\x00\x09", "protocol header"),
    (b"GET / HTTP/1.1\r\n", "protocol header"),
    (start_ok(b"PLAIN", b"\0a\0b", kind=8), "frame type 8"),
    (start_ok(b"PLAIN", b"\0a\0b", channel=1), "channel 1"),
    (start_ok(b"PLAIN", b"\0a\0b", method=(10, 31)), "not Connection.StartOk"),
    (start_ok(b"PLAIN", b"\0a\0b", end=b"\x00"), "frame-end"),
    (start_ok(b"PLAIN", b"\0a\0b", tail=b"x"), "after the locale"),
    (start_ok(b"EXTERNAL", b""), "mechanism 'EXTERNAL'"),
    (start_ok(b"PLAIN", b"bob\0alice\0secret"), "authzid"),
    (start_ok(b"PLAIN", b"\0alice\0sec\0ret"), "authzid"),
    (start_ok(b"PLAIN", b"\0alice"), "authzid"),
    (start_ok(b"PLAIN", b"\0\xff\xfe\0secret"), "not UTF-8"),
    (start_ok(b"AMQPLAIN", amqplain(PASSWORD=b"secret")), "0 LOGIN fields"),
    (start_ok(b"AMQPLAIN", amqplain(LOGIN=b"a") + amqplain(LOGIN=b"b")), "2 LOGIN fields"),
    (start_ok(b"AMQPLAIN", _shortstr(b"LOGIN") + b"I" + struct.pack(">i", 1)),
     "not a long string"),
    (start_ok(b"AMQPLAIN", _shortstr(b"LOGIN") + b"S" + struct.pack(">I", 99) + b"ab"),
     "past the end"),
])
def test_bad_handshakes_are_refused(data, reason):
    with pytest.raises(HandshakeRefused, match=reason):
        parse_login(data)


def test_a_field_length_past_its_frame_is_refused():
    data = bytearray(start_ok(b"PLAIN", b"\0alice\0secret"))
    struct.pack_into(">I", data, len(PROTOCOL_HEADER) + 7 + 4, 10**6)  # client properties
    with pytest.raises(HandshakeRefused, match="past the end"):
        parse_login(bytes(data))


def test_an_oversized_frame_is_refused_from_its_header():
    header = PROTOCOL_HEADER + struct.pack(">BHI", 1, 0, MAX_HANDSHAKE)
    with pytest.raises(HandshakeRefused, match="at most"):
        parse_login(header)
    largest = start_ok(b"PLAIN", b"\0alice\0" + b"p" * MAX_HANDSHAKE)
    with pytest.raises(HandshakeRefused, match="at most"):
        parse_login(largest[:len(PROTOCOL_HEADER) + 7])


# The relay between real clients and the real broker.

@pytest.fixture
def relay_for():
    made: list[Relay] = []

    def make(user: str, limits: RelayLimits = DEFAULT_LIMITS) -> Relay:
        listener = socket.create_server(("127.0.0.1", 0))
        made.append(Relay(listener, BROKER, f"test-{user}", user, limits))
        return made[-1]

    yield make
    for relay in made:
        relay.close()


def _connect(relay: Relay, user: str, password: str, method: str | None = None,
             kind: type[amqp.Connection] = amqp.Connection) -> amqp.Connection:
    port = relay.listener.getsockname()[1]
    connection = kind(f"127.0.0.1:{port}", userid=user, password=password,
                      login_method=method, connect_timeout=5, read_timeout=10)
    connection.connect()
    return connection


def _drained(relay: Relay) -> bool:
    """Whether both sockets of every connection were let go, within 5 s."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with relay._lock:
            if not relay._open:
                return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize("method", ["PLAIN", "AMQPLAIN"])
def test_the_allowed_login_passes(relay_for, method):
    connection = _connect(relay_for("guest"), "guest", "guest", method)
    try:
        channel = connection.channel()
        name = channel.queue_declare(f"relay-test-{uuid.uuid4().hex}", exclusive=True).queue
        channel.basic_publish(amqp.Message("through"), "", name)
        for _ in range(50):
            message = channel.basic_get(name, no_ack=True)
            if message is not None:
                break
            time.sleep(0.05)
        assert message is not None and message.body == "through"
    finally:
        connection.close()


@pytest.mark.parametrize("method", ["PLAIN", "AMQPLAIN"])
def test_another_user_is_cut_off_and_logged(relay_for, caplog, method):
    relay = relay_for("murano-agent-somebody")
    with caplog.at_level(logging.WARNING, logger=relay_module.__name__):
        with pytest.raises(OSError, match="closed connection"):
            _connect(relay, "guest", "guest", method)
        assert _drained(relay)
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert refusals == ["relay test-murano-agent-somebody: refused broker user 'guest' "
                        "(only 'murano-agent-somebody' may log in)"]


def test_the_broker_still_checks_the_password(relay_for):
    relay = relay_for("guest")
    with pytest.raises(amqp.exceptions.AccessRefused):
        _connect(relay, "guest", "not-the-password")


def _raw_client(relay: Relay) -> socket.socket:
    return socket.create_connection(relay.listener.getsockname(), timeout=10)


def _read_to_end(sock: socket.socket) -> bytes:
    received = b""
    while data := sock.recv(65536):
        received += data
    return received


def test_a_login_split_into_single_bytes_passes(relay_for):
    relay = relay_for("guest")
    with _raw_client(relay) as client:
        hello = start_ok(b"PLAIN", b"\0guest\0guest")
        for at in range(len(hello)):
            client.sendall(hello[at:at + 1])
            time.sleep(0.001)
        client.settimeout(5)
        answer = client.recv(65536)  # Connection.Start, then the broker's Tune
        while b"\x00\x0a\x00\x1e" not in answer:  # Connection.Tune: class 10, method 30
            answer += client.recv(65536)
        assert answer[0] == 1


def test_a_handshake_too_slow_is_cut(relay_for, caplog, monkeypatch):
    monkeypatch.setattr(relay_module, "HANDSHAKE_TIMEOUT", 0.5)
    relay = relay_for("guest")
    with caplog.at_level(logging.WARNING, logger=relay_module.__name__):
        with _raw_client(relay) as client:
            client.sendall(PROTOCOL_HEADER)
            start = _read_to_end(client)  # the broker's Connection.Start, then the cut
        assert start[:1] == b"\x01" and _drained(relay)
    assert any("no login within 0.5 s" in r.getMessage() for r in caplog.records)


def test_an_oversized_handshake_is_cut_before_it_is_sent(relay_for, caplog):
    relay = relay_for("guest")
    with caplog.at_level(logging.WARNING, logger=relay_module.__name__):
        with _raw_client(relay) as client:
            client.sendall(PROTOCOL_HEADER + struct.pack(">BHI", 1, 0, 10**6))
            _read_to_end(client)
        assert _drained(relay)
    assert any("at most" in r.getMessage() for r in caplog.records)


def test_a_broker_outage_is_one_warning_however_often_the_agent_retries(caplog):
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    relay = Relay(socket.create_server(("127.0.0.1", 0)), ("127.0.0.1", port), "test-cut",
                  "guest")
    try:
        with caplog.at_level(logging.DEBUG, logger=relay_module.__name__):
            for _ in range(4):  # the agent connecting again each second, sped up
                with _raw_client(relay) as client:
                    client.sendall(start_ok(b"PLAIN", b"\0guest\0guest"))
                    # the relay's own Connection.Start, then the cut at its login
                    assert _read_to_end(client) == relay_module.STAND_IN_START
            with socket.create_server(("127.0.0.1", port)) as broker:  # back
                with _raw_client(relay) as client:
                    client.sendall(start_ok(b"PLAIN", b"\0guest\0guest"))
                    broker.settimeout(5)
                    broker.accept()[0].close()
                deadline = time.monotonic() + 5  # (the relay says so after its connect)
                while not any("answers again" in r.getMessage() for r in caplog.records) \
                        and time.monotonic() < deadline:
                    time.sleep(0.02)
    finally:
        relay.close()
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [m for level, m in said if level == "WARNING"] == [
        f"relay test-cut: the broker 127.0.0.1:{port} is unreachable: "
        "[Errno 111] Connection refused"]
    assert sum("still unreachable" in m for level, m in said if level == "DEBUG") == 3
    assert [m.rsplit(",", 1)[0] for level, m in said if "answers again" in m] == [
        f"relay test-cut: the broker 127.0.0.1:{port} answers again"]


@pytest.mark.skipif(bool(missing_for_namespaces()), reason="no namespaces here")
def test_a_sandbox_refuses_a_tls_broker_its_relay_cannot_read(tmp_path):
    spec = ServerSpec(server_id=str(uuid.uuid4()), hostname="node-1", folder=tmp_path,
                      agent_ini="", broker_url="amqps://guest:guest@127.0.0.1:5671//")
    with pytest.raises(SandboxError, match="server node-1's agent would reach the broker "
                                           "over TLS.*use amqp://"):
        NamespaceLauncher().start(spec)
    assert list(tmp_path.iterdir()) == []  # nothing was made


# What one guest may take through its relay (issue 44).

def _held(relay: Relay) -> int:
    with relay._lock:
        return relay._connections


def test_a_refused_login_never_opens_a_broker_socket():
    with TcpForwarder(BROKER[1]) as broker:  # counts the connections made to the broker
        refusing = Relay(socket.create_server(("127.0.0.1", 0)), ("127.0.0.1", broker.port),
                         "test-count", "murano-agent-somebody")
        admitting = Relay(socket.create_server(("127.0.0.1", 0)),
                          ("127.0.0.1", broker.port), "test-count", "guest")
        try:
            with pytest.raises(OSError, match="closed connection"):
                _connect(refusing, "guest", "guest")
            with _raw_client(refusing) as client:  # one that never logs in
                client.sendall(PROTOCOL_HEADER)
                start = b""
                while len(start) < len(relay_module.STAND_IN_START):
                    start += client.recv(65536)
                assert start == relay_module.STAND_IN_START  # the relay's, not the broker's
                client.sendall(struct.pack(">BHI", 8, 0, 0) + b"\xce")  # a heartbeat
                assert _read_to_end(client) == b""
            assert _drained(refusing)
            assert broker.forwarded == 0

            _connect(admitting, "guest", "guest").close()
            assert broker.forwarded == 1
        finally:
            refusing.close()
            admitting.close()


def test_connections_past_the_limit_are_refused_on_no_thread_and_the_relay_goes_on(
        relay_for, caplog):
    """A guest opening 100 connections with its own login: its relay holds 4, one thread
    each; the others are closed as they are accepted, with one warning for them all."""
    relay = relay_for("guest")
    opened: list[amqp.Connection] = []
    refused = 0
    before = threading.active_count()
    with caplog.at_level(logging.DEBUG, logger=relay_module.__name__):
        try:
            for _ in range(100):
                try:
                    opened.append(_connect(relay, "guest", "guest"))
                except OSError:
                    refused += 1
            threads = threading.active_count() - before
            assert (len(opened), refused) == (DEFAULT_LIMITS.connections, 96)
            assert threads <= DEFAULT_LIMITS.connections

            opened.pop().close()
            deadline = time.monotonic() + 5  # until the relay has seen it end
            while _held(relay) == DEFAULT_LIMITS.connections and time.monotonic() < deadline:
                time.sleep(0.01)
            opened.append(_connect(relay, "guest", "guest"))  # the relay serves on
            opened[-1].channel().basic_qos(0, 1, False)  # a round trip through it
        finally:
            for connection in opened:
                connection.close()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        "relay test-guest: refused a connection: it holds 4, its most (the next ones "
        "are refused too until one ends)"]


def test_connections_need_no_thread_and_a_loop_with_none_refuses_its_relays(
        relay_for, monkeypatch):
    """Issue 47: a relay's connections are served on its loop's one thread, so none is
    refused for want of a thread; a loop that cannot start its thread refuses the relay
    made on it (RuntimeError, which a sandbox's start reports) and starts at the next."""
    relay = relay_for("guest")
    _connect(relay, "guest", "guest").close()  # the loop runs
    start = threading.Thread.start

    def no_thread(thread: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", no_thread)
    held = [_connect(relay, "guest", "guest") for _ in range(DEFAULT_LIMITS.connections)]
    for connection in held:
        connection.channel().basic_qos(0, 1, False)  # a round trip through the relay
        connection.close()

    loop = relay_module.RelayLoop("test")
    listener = socket.create_server(("127.0.0.1", 0))
    with pytest.raises(RuntimeError, match="can't start new thread"):
        Relay(listener, BROKER, "test-nothread", "guest", loop=loop)
    listener.close()
    monkeypatch.setattr(threading.Thread, "start", start)
    again = Relay(socket.create_server(("127.0.0.1", 0)), BROKER, "test-again", "guest",
                  loop=loop)
    try:
        _connect(again, "guest", "guest").close()
    finally:
        again.close()
        loop.close()
    assert loop.threads == 0


def test_threads_do_not_grow_with_the_relays_or_their_connections():
    """200 servers' relays on one loop, each holding its agent's connection: one thread
    for them all (there were one per relay and one per connection)."""
    loop = relay_module.RelayLoop("test-many")
    before = threading.active_count()
    relays = [Relay(socket.create_server(("127.0.0.1", 0)), BROKER, f"test-{n}", "guest",
                    loop=loop) for n in range(200)]
    connections: list[amqp.Connection] = []
    raw: list[socket.socket] = []
    try:
        for relay in relays[:50]:  # each a whole AMQP connection (the broker's own cost)
            connections.append(_connect(relay, "guest", "guest"))
        raw += [_raw_client(relay) for relay in relays[50:]]  # the others mid-handshake
        for client in raw:
            client.sendall(PROTOCOL_HEADER)
        for client in raw:
            assert client.recv(7)[:1] == b"\x01"  # each answered with a Connection.Start
        assert threading.active_count() - before == loop.threads == 1
        for connection in connections:
            connection.channel().basic_qos(0, 1, False)
    finally:
        for connection in connections:
            connection.close()
        for client in raw:
            client.close()
        for relay in relays:
            relay.close()
        loop.close()
    assert all(relay.listener.fileno() == -1 for relay in relays)  # closed as close returned
    assert threading.active_count() == before


class _AsksForAllChannels(amqp.Connection):
    """A client that answers the broker's Connection.Tune asking for 65535 channels."""

    def _on_tune(self, channel_max: int, frame_max: int, server_heartbeat: int,
                 argsig: str = "BlB") -> None:
        super()._on_tune(0, frame_max, server_heartbeat, argsig)


@pytest.mark.parametrize("kind", [amqp.Connection, _AsksForAllChannels])
def test_a_channel_past_the_relays_limit_is_refused_by_the_broker(relay_for, kind):
    relay = relay_for("guest", RelayLimits(connections=4, channels=3))
    connection = _connect(relay, "guest", "guest", kind=kind)
    try:
        if kind is amqp.Connection:
            assert connection.channel_max == 3  # what the broker's Tune said, lowered
        for number in (1, 2, 3):
            connection.channel(number)
        with pytest.raises(amqp.exceptions.NotAllowed,
                           match=r"reached the negotiated channel_max \(3\)"):
            connection.channel(4)
    finally:
        connection.collect()
