"""Fixtures for the cloud tests: a fake clock and a stub Heat v1 API on loopback."""

from __future__ import annotations

import base64
import configparser
import itertools
import json
import os
import threading
import time
import uuid
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from murano_engine.clouds.local import LocalCloud
from murano_engine.dsl import boundary
from murano_engine.messaging.identities import BrokerIdentity
from tests.loopback_http import serving

TOKEN = "stub-token"
TENANT = "tenant-1"


class FakeClock(boundary.Outside):
    """A boundary whose sleep only moves a counter forward."""

    def __init__(self) -> None:
        super().__init__()
        self.time = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.time += seconds


@pytest.fixture
def clock():
    with boundary.use(FakeClock()) as fake:
        yield fake


class FakeHeat:
    """Enough of Heat's v1 API (and keystone v3 tokens) to drive heatclient.

    Each operation stays IN_PROGRESS for ``busy_polls`` stack reads; a freshly
    started update first shows the previous settled state for ``lag_polls``
    reads, as a real Heat engine may. ``conflicts`` answers that many writes
    with 409; ``fail_with`` makes the next operation end FAILED with that
    reason; ``stuck`` keeps operations IN_PROGRESS forever.
    """

    def __init__(self) -> None:
        self.stacks: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        self.bodies: list[dict[str, Any]] = []
        self.busy_polls = 2
        self.lag_polls = 0
        self.conflicts = 0
        self.fail_with: str | None = None
        self.stuck = False
        self.users = {"demo": "secret"}
        self._clock = itertools.count(1)
        self._lock = threading.Lock()
        self.url = ""
        self.token = TOKEN
        self.tenant = TENANT

    @property
    def endpoint(self) -> str:
        return f"{self.url}/v1/{TENANT}"

    def stamp(self) -> str:
        return f"2024-01-01T00:{next(self._clock):02d}:00Z"

    # --- request handling -------------------------------------------------
    def handle(self, method: str, path: str, query: dict, headers, body: Any):
        with self._lock:
            self.requests.append((method, path))
            if path == "/identity/v3/auth/tokens" and method == "POST":
                return self._issue_token(body)
            if headers.get("X-Auth-Token") != TOKEN:
                return 401, {}, _error(401, "Unauthorized", "Authentication required")
            prefix = f"/v1/{TENANT}/stacks"
            if not path.startswith(prefix):
                return 404, {}, _error(404, "Not Found", f"No route for {path}")
            parts = [p for p in path[len(prefix) :].split("/") if p]
            if method == "POST" and not parts:
                self.bodies.append(body)
                return self._create(body)
            if not parts or parts[0] not in self.stacks:
                return 404, {}, _error(404, "Not Found", f"The Stack ({parts}) could not be found.")
            record = self.stacks[parts[0]]
            if len(parts) == 1:
                location = f"{self.url}{prefix}/{parts[0]}/{record['id']}"
                if query:
                    location += "?" + "&".join(f"{k}={v[0]}" for k, v in query.items())
                return 302, {"Location": location}, {}
            if parts[1] != record["id"]:
                return 404, {}, _error(404, "Not Found", "Stack id mismatch")
            rest = parts[2:]
            if method == "GET" and not rest:
                return 200, {}, {"stack": self._show(record, query)}
            if method == "GET" and rest == ["template"]:
                return 200, {}, record["template"]
            if method in ("PUT", "PATCH") and not rest:
                self.bodies.append(body)
                return self._update(record, body, method)
            if method == "DELETE" and not rest:
                return self._delete(record)
            return 404, {}, _error(404, "Not Found", f"No route for {method} {path}")

    def _issue_token(self, body: dict):
        ident = body["auth"]["identity"]["password"]["user"]
        if self.users.get(ident.get("name")) != ident.get("password"):
            return 401, {}, _error(401, "Unauthorized", "Invalid credentials")
        heat = f"{self.url}/v1/{TENANT}"
        token = {
            "token": {
                "methods": ["password"],
                "expires_at": "2999-01-01T00:00:00.000000Z",
                "project": {"id": TENANT, "name": "demo", "domain": {"id": "default"}},
                "user": {"id": "u1", "name": ident["name"], "domain": {"id": "default"}},
                "catalog": [
                    {
                        "type": "orchestration",
                        "name": "heat",
                        "endpoints": [{"interface": "public", "region": "RegionOne", "url": heat}],
                    }
                ],
            }
        }
        return 201, {"X-Subject-Token": TOKEN}, token

    def _conflict(self, message: str):
        return 409, {}, _error(409, "Conflict", message)

    def _refuses(self, record: dict | None = None):
        if self.conflicts:
            self.conflicts -= 1
            return self._conflict("Action is not allowed now: another operation is running")
        if record is not None and record["pending"]:
            return self._conflict(f"Stack {record['name']} is in progress")
        return None

    def _invalid(self, template: dict) -> str | None:
        for name, resource in (template.get("resources") or {}).items():
            if resource.get("type", "").startswith("Bad::"):
                return f"Resource {name}: Unknown resource Type : {resource['type']}"
        return None

    def _create(self, body: dict):
        refused = self._refuses()
        if refused:
            return refused
        name = body["stack_name"]
        if name in self.stacks:
            return self._conflict(f"The Stack ({name}) already exists.")
        problem = self._invalid(body["template"])
        if problem:
            return 400, {}, _error(400, "Bad Request", problem)
        record = {
            "name": name,
            "id": str(uuid.uuid4()),
            "created": self.stamp(),
            "updated": None,
            "status": "CREATE_IN_PROGRESS",
            "reason": "Stack CREATE started",
            "template": body["template"],
            "parameters": body.get("parameters", {}),
            "shown_template": body["template"],
        }
        self._begin(record, "CREATE", lag=0)
        self.stacks[name] = record
        return 201, {}, {"stack": {"id": record["id"], "links": []}}

    def _update(self, record: dict, body: dict, method: str):
        refused = self._refuses(record)
        if refused:
            return refused
        problem = self._invalid(body["template"])
        if problem:
            return 400, {}, _error(400, "Bad Request", problem)
        record["template"] = body["template"]
        record["parameters"] = body.get("parameters", {})
        record["method"] = method
        self._begin(record, "UPDATE", lag=self.lag_polls)
        return 202, {}, {}

    def _delete(self, record: dict):
        refused = self._refuses(record)
        if refused:
            return refused
        self._begin(record, "DELETE", lag=0)
        return 204, {}, None

    def _begin(self, record: dict, action: str, lag: int) -> None:
        record["pending"] = {
            "action": action,
            "lag": lag,
            "polls": self.busy_polls,
            "fail": self.fail_with,
        }
        self.fail_with = None
        if not lag:
            self._start(record)

    def _start(self, record: dict) -> None:
        action = record["pending"]["action"]
        record["status"] = f"{action}_IN_PROGRESS"
        record["reason"] = f"Stack {action} started"
        if action == "UPDATE":
            record["updated"] = self.stamp()

    def _advance(self, record: dict) -> None:
        pending = record["pending"]
        if not pending:
            return
        if pending["lag"]:
            pending["lag"] -= 1
            if not pending["lag"]:
                self._start(record)
            return
        if self.stuck:
            return
        if pending["polls"]:
            pending["polls"] -= 1
            return
        action = pending["action"]
        if pending["fail"]:
            record["status"], record["reason"] = f"{action}_FAILED", pending["fail"]
        else:
            record["status"] = f"{action}_COMPLETE"
            record["reason"] = f"Stack {action} completed successfully"
            record["shown_template"] = record["template"]
        record["pending"] = None
        if record["status"] == "DELETE_COMPLETE":
            del self.stacks[record["name"]]

    def _show(self, record: dict, query: dict) -> dict:
        self._advance(record)
        shown = {
            "id": record["id"],
            "stack_name": record["name"],
            "stack_status": record["status"],
            "stack_status_reason": record["reason"],
            "creation_time": record["created"],
            "updated_time": record["updated"],
            "parameters": {"OS::stack_name": record["name"], **record["parameters"]},
            "links": [],
        }
        if query.get("resolve_outputs", ["True"])[0] != "False":
            outputs = record["shown_template"].get("outputs", {})
            shown["outputs"] = [
                {"output_key": key, "output_value": item.get("value"), "description": ""}
                for key, item in outputs.items()
            ]
        return shown


def _error(code: int, title: str, message: str) -> dict:
    return {
        "code": code,
        "title": title,
        "explanation": message,
        "error": {"message": message, "type": title.replace(" ", ""), "traceback": None},
    }


def _handler(fake: FakeHeat) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            split = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            code, headers, payload = fake.handle(
                self.command, split.path, parse_qs(split.query), self.headers, body
            )
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(code)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def fake_heat():
    fake = FakeHeat()
    with serving(_handler(fake)) as fake.url:
        yield fake


class FakeAgent:
    """Stands in for a server's agent process: remembers the server it was started for."""

    def __init__(self, spec, start_delay: float) -> None:
        self.spec = spec
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(spec.agent_ini)
        self.input_queue = parser.get("rabbitmq", "input_queue", fallback="")
        self.running = False
        if start_delay:
            time.sleep(start_delay)
        self.running = True


class Agents(list):
    """A launcher for LocalCloud whose agents are fakes; every one it started, in order."""

    start_delay = 0.0

    def start(self, spec) -> None:
        if not self.running(spec):  # else: taken back after a restart
            self.append(FakeAgent(spec, self.start_delay))

    def running(self, spec=None) -> Any:
        """With a server: whether its agent runs; without: running agents by input queue."""
        alive = {a.input_queue: a for a in self if a.running}
        if spec is None:
            return alive
        return any(a.spec.server_id == spec.server_id for a in alive.values())

    def exited(self, spec) -> bool:
        """Whether the server's agent ended (the local cloud then marks it ERROR)."""
        return not self.running(spec)

    def stop(self, spec) -> None:
        for agent in self:
            if agent.spec.server_id == spec.server_id:
                agent.running = False

    def remove(self, spec) -> None:
        self.stop(spec)

    def detach(self, spec) -> None:
        """The engine lets go; the server (and its agent) keeps running."""

    def close(self) -> None:
        pass


@pytest.fixture
def agents() -> Agents:
    return Agents()


@pytest.fixture
def make_cloud(tmp_path, agents):
    """Open LocalClouds on one state folder (fake agents); all closed at the end."""
    opened: list[LocalCloud] = []

    def make(**options: Any) -> LocalCloud:
        options.setdefault("launcher", agents)
        options.setdefault("poll_interval", 0.01)
        cloud = LocalCloud(tmp_path / "state", **options)
        opened.append(cloud)
        return cloud

    yield make
    for cloud in opened:
        cloud.close()


@pytest.fixture
def cloud(make_cloud) -> LocalCloud:
    return make_cloud()


@pytest.fixture
def crash():
    """``crash(cloud)`` lets go of ``cloud``'s stacks as the death of its process would:
    the kernel drops its stack locks; nothing is saved or stopped."""

    def let_go(cloud: LocalCloud) -> None:
        for fd in cloud._owned.values():
            os.close(fd)
        cloud._owned.clear()

    return let_go


AGENT_CONF = """[DEFAULT]
debug = True
storage = /var/murano/plans
log_file = /var/log/murano-agent.log

[rabbitmq]
host = rabbit.example.org
port = 5672
login = guest
password = guest
virtual_host = /
input_queue = {queue}
result_routing_key = {results}
"""


def agent_conf(queue: str, results: str = "-execution-results-region",
               identity: BrokerIdentity | None = None) -> str:
    """An agent config consuming ``queue``, logging in as guest (or as ``identity``, and
    sending results to its exchange)."""
    conf = AGENT_CONF.format(queue=queue, results=results)
    if identity is None:
        return conf
    return conf.replace("login = guest\npassword = guest\n",
                        f"login = {identity.login}\npassword = {identity.password}\n"
                        f"result_exchange = {identity.result_exchange}\n")


def build_environment(
    servers: tuple[str, ...] = ("vm1", "vm2"),
    *,
    image: str = "ubuntu-22.04",
    flavor: str = "m1.small",
    ssh_port: int = 22,
    results: str = "-execution-results-region",
    environment_id: str = "1",
    cidr: str = "10.0.5.0/24",
    identities: Mapping[str, BrokerIdentity] | None = None,
) -> dict[str, Any]:
    """A region stack as the core library builds it: network, router, security
    group, and per server a port, multipart user data carrying agent.conf
    (alternately as a cloud-config write_files entry and as a MIME part), and
    outputs. A server named in ``identities`` logs in to the broker as its identity."""
    resources: dict[str, Any] = {
        "network": {"type": "OS::Neutron::Net", "properties": {"name": "env-net"}},
        "subnet": {
            "type": "OS::Neutron::Subnet",
            "properties": {
                "network": {"get_resource": "network"},
                "cidr": cidr,
                "dns_nameservers": ["8.8.8.8"],
            },
        },
        "router": {
            "type": "OS::Neutron::Router",
            "properties": {"external_gateway_info": {"network": "public"}},
        },
        "ri": {
            "type": "OS::Neutron::RouterInterface",
            "properties": {
                "router": {"get_resource": "router"},
                "subnet": {"get_resource": "subnet"},
            },
        },
        "default-sg": {
            "type": "OS::Neutron::SecurityGroup",
            "properties": {
                "rules": [
                    {"protocol": "icmp", "remote_ip_prefix": "0.0.0.0/0"},
                    {
                        "protocol": "tcp",
                        "port_range_min": ssh_port,
                        "port_range_max": ssh_port,
                        "remote_ip_prefix": "0.0.0.0/0",
                    },
                ]
            },
        },
    }
    outputs: dict[str, Any] = {"network-id": {"value": {"get_resource": "network"}}}
    for index, name in enumerate(servers):
        conf = agent_conf(f"e{environment_id}-h{name}", results,
                          (identities or {}).get(name))
        if index % 2 == 0:
            boot = {
                "type": "OS::Heat::CloudConfig",
                "properties": {
                    "cloud_config": {
                        "hostname": name,
                        "write_files": [
                            {
                                "path": "/etc/murano/agent.conf",
                                "encoding": "b64",
                                "content": base64.b64encode(conf.encode()).decode(),
                            }
                        ],
                    }
                },
            }
            conf_part = {"config": {"get_resource": f"boot_config-{name}"}}
        else:
            boot = {"type": "OS::Heat::SoftwareConfig", "properties": {"config": conf}}
            conf_part = {
                "config": {"get_resource": f"boot_config-{name}"},
                "filename": "agent.conf",
                "subtype": "plain",
            }
        resources[f"boot_config-{name}"] = boot
        resources[f"boot_script_{name}"] = {
            "type": "OS::Heat::SoftwareConfig",
            "properties": {"group": "ungrouped", "config": "#!/bin/sh\necho booted\n"},
        }
        resources[f"user_data-{name}"] = {
            "type": "OS::Heat::MultipartMime",
            "properties": {
                "parts": [conf_part, {"config": {"get_resource": f"boot_script_{name}"}}]
            },
        }
        resources[f"port-{name}"] = {
            "type": "OS::Neutron::Port",
            "properties": {
                "network": {"get_resource": "network"},
                "fixed_ips": [{"subnet": {"get_resource": "subnet"}}],
                "security_groups": [{"get_resource": "default-sg"}],
                "replacement_policy": "AUTO",
            },
        }
        resources[name] = {
            "type": "OS::Nova::Server",
            "properties": {
                "name": name,
                "image": image,
                "flavor": flavor,
                "user_data": {"get_resource": f"user_data-{name}"},
                "user_data_format": "RAW",
                "networks": [{"port": {"get_resource": f"port-{name}"}}],
            },
            "depends_on": ["ri"],
        }
        outputs[f"{name}-id"] = {"value": {"get_resource": name}}
        outputs[f"addresses-{name}"] = {"value": {"get_attr": [name, "addresses", "env-net"]}}
        outputs[f"{name}-ip"] = {"value": {"get_attr": [name, "networks", "env-net", 0]}}
    return {
        "heat_template_version": "2013-05-23",
        "description": "murano region stack",
        "resources": resources,
        "outputs": outputs,
    }


@pytest.fixture
def environment():
    return build_environment
