"""Test harness: the real RabbitMQ, agents run as real processes, unique queues, cleanup."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import kombu
import pytest

AMQP_URL = os.environ.get("MURANO_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672//")


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


def require_broker() -> None:
    """Fail loudly (not skip) when the broker the tests need is not there."""
    conn = kombu.Connection(AMQP_URL, connect_timeout=3)
    try:
        conn.connect()
    except Exception as exc:  # any failure means the suite cannot run
        pytest.fail(f"RabbitMQ at {AMQP_URL} is not reachable: {exc}")
    finally:
        conn.release()


def delete_queues(names: list[str]) -> None:
    with kombu.Connection(AMQP_URL, connect_timeout=3) as conn:
        for name in names:
            conn.default_channel.queue_delete(name)


def publish_raw(
    queue: str,
    body: str | bytes,
    message_id: str,
    headers: dict | None = None,
    reply_to: str | None = None,
) -> None:
    """Publish a message exactly as given, bypassing the engine client."""
    extra = {"reply_to": reply_to} if reply_to else {}
    with kombu.Connection(AMQP_URL, connect_timeout=3) as conn:
        kombu.Producer(conn.default_channel).publish(
            body,
            exchange="",
            routing_key=queue,
            message_id=message_id,
            headers=headers or {},
            **extra,
        )


def close_broker_connections(name_part: str) -> int:
    """Close, from the broker's side, the connections whose name contains ``name_part``."""
    listing = subprocess.run(
        ["rabbitmqctl", "-q", "list_connections", "pid", "client_properties"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    pids = [line.split("\t", 1)[0] for line in listing.splitlines() if name_part in line]
    for pid in pids:
        subprocess.run(
            ["rabbitmqctl", "-q", "close_connection", pid, "test drops the connection"],
            capture_output=True,
            check=True,
        )
    return len(pids)


class ResultReader:
    """A result queue read directly (no engine client), for raw-protocol tests."""

    def __init__(self) -> None:
        self.queue = unique("-execution-results-raw-")
        self._conn = kombu.Connection(AMQP_URL, connect_timeout=3)
        self._queue = self._conn.SimpleQueue(self.queue)

    def get(self, timeout: float = 10) -> tuple[str, dict]:
        """The next result: (AMQP message id, decoded body)."""
        message = self._queue.get(timeout=timeout)
        message.ack()
        return message.properties.get("message_id"), json.loads(message.body)

    def empty(self, wait: float) -> bool:
        """True when no result arrives within ``wait`` seconds."""
        try:
            self.get(wait)
        except self._queue.Empty:
            return True
        return False

    def close(self) -> None:
        """Delete the queue and the exchange of its name (kombu's SimpleQueue declares
        both; an exchange, unlike the queue, never expires)."""
        self._queue.close()
        channel = self._conn.default_channel
        channel.queue_delete(self.queue)
        channel.exchange_delete(self.queue)
        self._conn.release()


class AgentProcess:
    """``murano-agent --config-file`` in a child process, with its own storage folder."""

    def __init__(
        self,
        folder: Path,
        queue: str,
        result_queue: str,
        extra: str = "",
        port: int = 5672,
        env: dict[str, str] | None = None,
    ) -> None:
        self.folder = folder
        self.env = {**os.environ, **(env or {})}
        self.queue = queue
        self.log_file = folder / "agent.log"
        self.config = folder / "agent.conf"
        self.config.write_text(
            "[DEFAULT]\n"
            f"storage = {folder / 'storage'}\n"
            f"log_file = {self.log_file}\n"
            "debug = true\n"
            "plan_timeout = 3\n"
            f"{extra}\n"
            "[rabbitmq]\n"
            f"host = 127.0.0.1\nport = {port}\nlogin = guest\npassword = guest\n"
            "virtual_host = /\nreconnect_delay = 0.2\nreconnect_max_delay = 1\n"
            f"input_queue = {queue}\nresult_routing_key = {result_queue}\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> AgentProcess:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "murano_agent.cli", "--config-file", str(self.config)],
            stdout=subprocess.DEVNULL,
            stderr=open(self.folder / "stderr.txt", "ab"),  # noqa: SIM115 - child owns it
            env=self.env,
        )
        return self

    def kill(self) -> None:
        """SIGKILL: no chance to clean up, as in a crash."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        return self.log_file.read_text() if self.log_file.exists() else ""

    def wait_log(self, text: str, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log():
            if time.monotonic() > deadline:
                raise AssertionError(f"agent log never showed {text!r}:\n{self.log()}")
            time.sleep(0.05)


@pytest.fixture
def make_client():
    """Makes engine clients (each with its own result queue); closes them afterwards."""
    from murano_engine.messaging import AgentClient

    require_broker()
    made: list[AgentClient] = []

    def make(signing_key_pem: bytes | None = None) -> AgentClient:
        client = AgentClient(AMQP_URL, region=unique("t-"), signing_key_pem=signing_key_pem)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
    delete_queues([c.result_queue for c in made])


@pytest.fixture
def client(make_client):
    return make_client()


@pytest.fixture
def make_agent(tmp_path):
    """Starts agent processes for a client and waits until they answer; kills them after."""
    started: list[AgentProcess] = []

    def make(
        client=None,
        extra: str = "",
        result_queue: str | None = None,
        port: int = 5672,
        env: dict[str, str] | None = None,
    ) -> AgentProcess:
        """An agent answering to ``client`` (ready when this returns) or to ``result_queue``,
        reaching the broker on ``port`` (another than 5672 is a forwarder's), with ``env``
        added to its environment."""
        queue = unique("e") + "-" + unique("h")
        folder = tmp_path / f"agent{len(started)}"
        folder.mkdir()
        agent = AgentProcess(
            folder, queue, result_queue or client.result_queue, extra, port, env
        ).start()
        started.append(agent)
        if result_queue is None:
            assert client.is_ready(queue, 20), agent.log()
        return agent

    yield make
    for agent in started:
        agent.kill()
    delete_queues([a.queue for a in started])


@pytest.fixture
def reader():
    require_broker()
    result_reader = ResultReader()
    yield result_reader
    result_reader.close()
