"""Slow and greedy clients: 200 connections that trickle their headers or their body do
not keep another client from its answers, and each is cut off at its read deadline."""

from __future__ import annotations

import re
import socket
import threading
import time

import requests

SLOW = 200
HEADER_TIMEOUT = 3.0
BODY_TIMEOUT = 4.0
#: the deadlines are checked every second; a closed socket is seen within this much more
SLACK = 3.0


class Tricklers(threading.Thread):
    """``count`` connections, half trickling a never-ending head, half a body they said
    was 100,000 bytes: one byte each every half second."""

    def __init__(self, port: int, count: int) -> None:
        super().__init__(daemon=True)
        self.sockets = []
        for index in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            if index % 2:
                sock.sendall(b"POST /v1/environments HTTP/1.1\r\nHost: x\r\n"
                             b"X-Auth-Token: tok-a\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 100000\r\n\r\n{")
            else:
                sock.sendall(b"GET /v1/environments HTTP/1.1\r\nHost: x\r\nX-Pad: ")
            sock.setblocking(False)
            self.sockets.append(sock)
        self.closed_at: dict[int, float] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for index, sock in enumerate(self.sockets):
                if index in self.closed_at:
                    continue
                try:
                    if sock.recv(4096) == b"":
                        self.closed_at[index] = time.monotonic()
                        continue
                except BlockingIOError:
                    pass
                except OSError:
                    self.closed_at[index] = time.monotonic()
                    continue
                try:
                    sock.send(b"a")
                except OSError:
                    self.closed_at[index] = time.monotonic()
            time.sleep(0.5)

    def close(self) -> None:
        self.done.set()
        self.join()
        for sock in self.sockets:
            sock.close()


def test_slow_connections_neither_lock_others_out_nor_outlive_their_deadline(start_api):
    api = start_api(header_timeout=str(HEADER_TIMEOUT), body_timeout=str(BODY_TIMEOUT))
    started = time.monotonic()
    slow = Tricklers(api.port, SLOW)
    slow.start()
    try:
        other = requests.Session()
        slowest = 0.0
        while time.monotonic() - started < HEADER_TIMEOUT - 0.5:  # all 200 still open
            asked = time.monotonic()
            answer = other.get(api.url + "/v1/environments", timeout=30,
                               headers={"X-Auth-Token": "tok-b"})
            assert answer.status_code == 200
            slowest = max(slowest, time.monotonic() - asked)
            fresh = requests.get(api.url + "/v1/environments", timeout=30,  # new connection
                                 headers={"X-Auth-Token": "tok-b"})
            assert fresh.status_code == 200
            slowest = max(slowest, time.monotonic() - asked)
        assert not slow.closed_at, "a slow connection was closed before its deadline"
        assert slowest < 1.0, slowest
        deadline = started + BODY_TIMEOUT + SLACK + 1
        while len(slow.closed_at) < SLOW and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(slow.closed_at) == SLOW, f"{SLOW - len(slow.closed_at)} still open"
        latest = max(slow.closed_at.values()) - started
        assert latest < BODY_TIMEOUT + SLACK, latest
    finally:
        slow.close()


def test_a_connection_that_sends_nothing_is_closed_at_the_head_deadline(start_api):
    # Not at idle_timeout (60 s): a thousand such connections would hold every place of
    # connection_limit that long, and a loop opening them would lock clients out.
    api = start_api(header_timeout=str(HEADER_TIMEOUT))
    opened = time.monotonic()
    with socket.create_connection(("127.0.0.1", api.port), timeout=HEADER_TIMEOUT + SLACK
                                  + 5) as silent:
        assert silent.recv(4096) == b""  # closed by the server
    assert time.monotonic() - opened < HEADER_TIMEOUT + SLACK
    # A keep-alive connection waiting between its requests is kept past that deadline.
    with socket.create_connection(("127.0.0.1", api.port), timeout=30) as kept:
        for _ in range(2):
            kept.sendall(b"GET /v1/environments HTTP/1.1\r\nHost: x\r\n"
                         b"X-Auth-Token: tok-a\r\n\r\n")
            answer = kept.recv(65536)
            while b"\r\n\r\n" not in answer:
                answer += kept.recv(65536)
            head, body = answer.split(b"\r\n\r\n", 1)
            assert head.startswith(b"HTTP/1.1 200 "), head
            length = int(re.search(rb"(?i)content-length: (\d+)", head)[1])
            while len(body) < length:  # the whole answer read: the next starts clean
                body += kept.recv(65536)
            time.sleep(HEADER_TIMEOUT + SLACK)


def test_an_oversized_head_is_refused(start_api):
    api = start_api(header_size_limit="4096")
    answer = requests.get(api.url + "/v1/environments", timeout=30,
                          headers={"X-Auth-Token": "tok-a", "X-Pad": "a" * 8000})
    assert answer.status_code == 431
    assert requests.get(api.url + "/v1/environments", timeout=30,
                        headers={"X-Auth-Token": "tok-a"}).status_code == 200
