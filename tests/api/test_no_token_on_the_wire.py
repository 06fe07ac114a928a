"""No user token on the broker: every message a full API deploy puts on RabbitMQ (tasks,
results, step reports, plans and the agents' results) is captured with RabbitMQ's
firehose on a virtual host of the test's own, and none holds the caller's token; every
plan is signed (``murano-api``'s default configuration)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
import uuid
from typing import Any

import kombu
import pytest

from murano_engine.api.catalog import pack_folder
from murano_engine.clouds.local.sandbox import missing_for_namespaces
from tests.api.test_flow import KV, KV_CLASS

TOKEN = "tok-a"  # tests/api/conftest.py: project proj-a, user alice

pytestmark = pytest.mark.skipif(
    shutil.which("rabbitmqctl") is None or shutil.which("python3") is None
    or sys.platform != "linux" or bool(missing_for_namespaces()),
    reason="needs rabbitmqctl (for a vhost with the firehose) and the sandboxed local cloud")


def _rabbitmqctl(*args: str) -> None:
    subprocess.run(["rabbitmqctl", "-q", *args], check=True, capture_output=True, timeout=60)


class Firehose:
    """Every message published on a vhost (RabbitMQ's ``trace_on``), kept in order."""

    def __init__(self, url: str) -> None:
        self.messages: list[dict[str, Any]] = []
        self._conn = kombu.Connection(url, connect_timeout=5)
        queue = kombu.Queue(f"firehose-{uuid.uuid4().hex[:8]}", exclusive=True,
                            exchange=kombu.Exchange("amq.rabbitmq.trace", type="topic",
                                                    passive=True),
                            routing_key="publish.#")
        self._consumer = kombu.Consumer(self._conn.channel(), [queue], accept=None,
                                        on_message=self._keep)
        self._consumer.consume()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _keep(self, message: kombu.Message) -> None:
        headers = message.headers or {}
        self.messages.append({"routing_keys": list(headers.get("routing_keys") or []),
                              "exchange": headers.get("exchange_name"),
                              "properties": headers.get("properties") or {},
                              "body": message.body})
        message.ack()

    def _drain(self) -> None:
        while not self._stop.is_set():
            try:
                self._conn.drain_events(timeout=0.2)
            except TimeoutError:
                continue

    def close(self) -> None:
        time.sleep(1)  # the last messages' traces
        self._stop.set()
        self._thread.join(5)
        self._conn.release()


def _raw(message: dict[str, Any]) -> bytes:
    """Everything of a captured message: body, properties and headers."""
    body = message["body"]
    return (body if isinstance(body, bytes) else str(body).encode()) \
        + repr(message["properties"]).encode()


def test_an_api_deploy_puts_no_token_on_the_broker(start_api, tmp_path):
    tag = f"murano-wire-{uuid.uuid4().hex[:8]}"
    # the guests' virtual host and the engine's own (tasks, results, reports), both traced
    url = f"amqp://{tag}:{tag}@127.0.0.1:5672/{tag}"
    engine_url = f"amqp://{tag}:{tag}@127.0.0.1:5672/{tag}-engine"
    _rabbitmqctl("add_vhost", tag)
    _rabbitmqctl("add_vhost", f"{tag}-engine")
    firehoses: list[Firehose] = []
    try:
        _rabbitmqctl("add_user", tag, tag)
        _rabbitmqctl("set_user_tags", tag, "administrator")  # it mints the servers' users
        for vhost in (tag, f"{tag}-engine"):
            _rabbitmqctl("set_permissions", "-p", vhost, tag, ".*", ".*", ".*")
            _rabbitmqctl("trace_on", "-p", vhost)
        firehoses = [Firehose(url), Firehose(engine_url)]
        api = start_api(broker=engine_url, environment_class="io.murano.Environment",
                        sections={"local_cloud": {"state_dir": str(tmp_path / "cloud")},
                                  "rabbitmq": {"url": url}})
        try:
            api.start_worker()
            api.ok("POST", "/v1/catalog/packages", files={"p": ("kv.zip", pack_folder(KV))})
            env = api.ok("POST", "/v1/environments", json={"name": "wire"})
            base = f"/v1/environments/{env['id']}"
            sid = api.ok("POST", f"{base}/configure")["id"]
            api.ok("POST", f"{base}/services", headers={"X-Configuration-Session": sid},
                   json={"?": {"id": uuid.uuid4().hex, "type": KV_CLASS}, "name": "kv",
                         "nodeCount": 1, "basePort": 29960, "image": "debian-12",
                         "flavor": "m1.small"})
            api.ok("POST", f"{base}/sessions/{sid}/deploy")
            deployed = api.wait_env(env["id"], timeout=180, version=1)
            assert deployed["status"] == "ready", api.ok("GET", f"{base}/deployments")
            assert api.request("DELETE", base).status_code == 200
            deadline = time.monotonic() + 120
            while api.ok("GET", "/v1/environments")["environments"]:
                assert time.monotonic() < deadline, "the environment was not deleted"
                time.sleep(0.5)
        finally:
            for firehose in firehoses:
                firehose.close()
            api.stop()
        messages = [m for firehose in firehoses for m in firehose.messages]

        def routed(prefix: str) -> list[dict[str, Any]]:
            return [m for m in messages
                    if any(k.startswith(prefix) for k in m["routing_keys"])]

        tasks, results = routed("murano-tasks-"), routed("murano-results-")
        plans, answers = routed("e"), routed("-execution-results-")
        assert len(tasks) == 2, "a deploy task and a delete task"
        assert any(b"proj-a" in _raw(t) and b"alice" in _raw(t) for t in tasks)  # ids do go
        assert len(results) >= 2 and len(plans) >= 3 and len(answers) >= 3
        for plan in plans:
            assert plan["properties"].get("headers", {}).get("signature"), plan
            assert json.loads(plan["body"])["Stamp"]
        carrying = [m["routing_keys"] for m in messages if TOKEN.encode() in _raw(m)]
        assert carrying == [], f"the user's token went over the broker in {carrying}"
    finally:
        for vhost in (tag, f"{tag}-engine"):
            subprocess.run(["rabbitmqctl", "-q", "delete_vhost", vhost], capture_output=True,
                           timeout=60)
        subprocess.run(["rabbitmqctl", "-q", "delete_user", tag], capture_output=True,
                       timeout=60)
