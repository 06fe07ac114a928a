"""HelloWeb's service (``Resources/scripts/hello.py``) on its own, on loopback."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

HELLO = (Path(__file__).resolve().parents[2] / "dsl_packages" / "io.murano.apps.linux.HelloWeb"
         / "Resources" / "scripts" / "hello.py")


def _hello(*args: str) -> subprocess.CompletedProcess:
    """``hello.py ARGS``, its stderr read from a file: the service it may leave running
    holds the standard streams it was given (configure.sh gives it its log)."""
    with tempfile.TemporaryFile("w+") as stderr:
        done = subprocess.run([sys.executable, "-I", "-S", str(HELLO), *args],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=stderr, text=True, timeout=30)
        stderr.seek(0)
        done.stderr = stderr.read()
    return done


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _ask(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(request)
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    return answer


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    (tmp_path / "greeting").write_text("hi there\n")
    (tmp_path / "installs").write_text("a\nb\n")
    port = _free_port()
    done = _hello("serve", "--host", "127.0.0.1", "--port", str(port), "--home", str(tmp_path))
    assert done.returncode == 0, done.stderr
    pid = int((tmp_path / "hello.pid").read_text())
    yield port, tmp_path
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_it_answers_once_serve_returns(service: tuple[int, Path]) -> None:
    port, _ = service
    answer = _ask(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200 OK")
    assert f"Content-Length: {len(body)}".encode() in head
    assert body == f"hi there from {socket.gethostname()}\n".encode()


def test_info_counts_installs_and_configures(service: tuple[int, Path]) -> None:
    port, _ = service
    body = _ask(port, b"GET /info HTTP/1.0\r\n\r\n").partition(b"\r\n\r\n")[2]
    assert json.loads(body) == {"greeting": "hi there", "hostname": socket.gethostname(),
                                "installs": 2, "configures": 0}


@pytest.mark.parametrize(("request_bytes", "status"), [
    (b"GET /nothing HTTP/1.0\r\n\r\n", b"404"),
    (b"POST / HTTP/1.0\r\n\r\n", b"501"),
    (b"garbage\r\n\r\n", b"400"),
    (b"\r\n\r\n", b"400"),
])
def test_other_requests_get_an_error_status(service: tuple[int, Path], request_bytes: bytes,
                                            status: bytes) -> None:
    port, _ = service
    assert _ask(port, request_bytes).split(b" ")[1] == status


def test_a_silent_client_does_not_stop_the_others(service: tuple[int, Path]) -> None:
    port, _ = service
    with socket.create_connection(("127.0.0.1", port)):
        assert _ask(port, b"GET / HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.0 200")


def test_a_taken_port_fails_serve(service: tuple[int, Path]) -> None:
    port, home = service
    done = _hello("serve", "--host", "127.0.0.1", "--port", str(port), "--home", str(home))
    assert done.returncode != 0 and "Address already in use" in done.stderr


def test_sigterm_ends_the_service_and_gone_sees_it(service: tuple[int, Path]) -> None:
    port, home = service
    pid = int((home / "hello.pid").read_text())
    os.kill(pid, signal.SIGTERM)
    started = time.monotonic()
    with pytest.raises(OSError):  # the socket closes with the process
        while time.monotonic() - started < 10:
            _ask(port, b"GET / HTTP/1.0\r\n\r\n")
            time.sleep(0.05)
    # its parent is not this process, so it may linger a zombie until reaped: gone
    # accepts that, waiting for the pid
    assert _hello("gone", "--pidfile", str(home / "hello.pid"), "--timeout", "0.2"
                  ).returncode in (0, 1)


@pytest.mark.parametrize("args", [[], ["start"], ["serve", "--host"], ["serve", "--port", "x"],
                                  ["serve", "--host", "h", "--port", "1"]])
def test_bad_arguments_print_the_usage(args: list[str]) -> None:
    done = _hello(*args)
    assert done.returncode == 1 and "usage: hello.py serve" in done.stderr
