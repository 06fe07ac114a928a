"""Fixtures for the system-class tests: an executor over the core library, and a fake
OpenStack (keystone, Glance metadata definitions, Mistral) on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from murano_engine.dsl.executor import Executor
from murano_engine.dsl.objects import MuranoObject
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.interpreter import build_interpreter
from tests.loopback_http import serving


@pytest.fixture(scope="session")
def loader() -> PackageLoader:
    return PackageLoader([], build_interpreter())


@pytest.fixture
def make_object(loader: PackageLoader) -> Callable[..., tuple[Executor, MuranoObject]]:
    """``make_object(class name, services, **constructor args)`` -> (executor, object)."""

    def make(class_name: str, services: dict[str, Any],
             **kwargs: Any) -> tuple[Executor, MuranoObject]:
        executor = Executor(loader, services=services)
        obj = executor.new_object(loader.find_class(class_name), native_args=kwargs)
        return executor, obj

    return make


class FakeOpenStack:
    """Keystone v3 (tokens, projects, users), Glance metadata definitions and Mistral v2,
    enough for the engine's clients, on one loopback HTTP server.

    ``namespaces`` maps a resource type to Glance namespaces, ``objects`` a
    namespace to its objects (``page_size`` splits lists into pages). Mistral runs a
    started execution for ``polls_to_finish`` reads, then ends it in ``final_state``
    with ``final_output``. ``requests`` records (method, path, body) of every call.
    """

    TOKEN = "fake-token"

    def __init__(self) -> None:
        self.url = ""
        self.requests: list[tuple[str, str, str]] = []
        self.projects = {"p1": {"id": "p1", "name": "demo", "domain_id": "d1",
                                "description": "the demo project", "enabled": True,
                                "parent_id": "d1", "links": {}, "tags": ["blue"]}}
        self.users = {"u1": {"id": "u1", "name": "alice", "domain_id": "d1",
                             "email": "alice@example.org", "enabled": True,
                             "default_project_id": "p1", "links": {},
                             "password_expires_at": None}}
        self.namespaces: dict[str, list[dict[str, Any]]] = {}
        self.objects: dict[str, list[dict[str, Any]]] = {}
        self.page_size = 1000
        self.workflows: list[str] = []
        self.executions: dict[str, dict[str, Any]] = {}
        self.polls_to_finish = 2
        self.final_state = "SUCCESS"
        self.final_output: dict[str, Any] = {}
        self._lock = threading.Lock()

    # -- dispatch -----------------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict[str, list[str]], headers: Any,
               body: str) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            self.requests.append((method, path, body))
            if method == "POST" and path == "/identity/v3/auth/tokens":
                return self._token()
            if headers.get("X-Auth-Token") not in (None, self.TOKEN):
                return 401, {}, {"error": "bad token"}
            if path.startswith("/identity/v3/"):
                return self._identity(path.removeprefix("/identity/v3/"))
            if path.startswith("/image/v2/metadefs/"):
                return self._metadefs(path.removeprefix("/image/v2/metadefs/"), query)
            if path.startswith("/workflow/v2/"):
                return self._mistral(method, path.removeprefix("/workflow/v2/"), query, body)
            return 404, {}, {"error": f"no route for {method} {path}"}

    def _token(self) -> tuple[int, dict[str, str], Any]:
        def service(kind: str, path: str) -> dict[str, Any]:
            return {"type": kind, "endpoints": [
                {"interface": "public", "region": "RegionOne", "url": f"{self.url}{path}"}]}
        token = {"token": {
            "methods": ["password"], "expires_at": "2999-01-01T00:00:00.000000Z",
            "project": {"id": "p1", "name": "demo", "domain": {"id": "d1"}},
            "user": {"id": "u1", "name": "alice", "domain": {"id": "d1"}},
            "catalog": [service("identity", "/identity"), service("image", "/image"),
                        service("workflowv2", "/workflow/v2")]}}
        return 201, {"X-Subject-Token": self.TOKEN}, token

    def _identity(self, rest: str) -> tuple[int, dict[str, str], Any]:
        kind, _, ident = rest.partition("/")
        table = {"projects": self.projects, "users": self.users}.get(kind, {})
        if ident not in table:
            return 404, {}, {"error": {"code": 404, "message": f"{kind} {ident} not found"}}
        return 200, {}, {kind[:-1]: table[ident]}

    def _page(self, items: list[dict[str, Any]], key: str, path: str,
              query: dict[str, list[str]]) -> tuple[int, dict[str, str], Any]:
        start = int(query.get("marker", ["0"])[0])
        body: dict[str, Any] = {key: items[start:start + self.page_size]}
        if start + self.page_size < len(items):
            others = "".join(f"&{k}={v[0]}" for k, v in query.items() if k != "marker")
            body["next"] = f"/v2/metadefs/{path}?marker={start + self.page_size}{others}"
        return 200, {}, body

    def _metadefs(self, rest: str, query: dict[str, list[str]]) -> tuple[int, dict[str, str], Any]:
        if rest == "namespaces":
            kind = query.get("resource_types", [""])[0]
            return self._page(self.namespaces.get(kind, []), "namespaces", rest, query)
        parts = rest.split("/")
        if len(parts) == 3 and parts[0] == "namespaces" and parts[2] == "objects":
            if parts[1] not in self.objects:
                return 404, {}, {"error": f"namespace {parts[1]} not found"}
            return self._page(self.objects[parts[1]], "objects", rest, query)
        return 404, {}, {"error": f"no metadefs route {rest}"}

    def _mistral(self, method: str, rest: str, query: dict[str, list[str]],
                 body: str) -> tuple[int, dict[str, str], Any]:
        if method == "POST" and rest == "workflows":
            names = [name for name in yaml.safe_load(body) if name != "version"]
            self.workflows.extend(names)
            return 201, {}, {"workflows": [{"id": f"wf-{n}", "name": n} for n in names]}
        if method == "POST" and rest == "executions":
            data = json.loads(body)
            name = data.get("workflow_name")
            if name not in self.workflows:
                return 404, {}, {"faultstring": f"Workflow not found [name={name}]"}
            ident = f"ex-{len(self.executions) + 1}"
            self.executions[ident] = {"id": ident, "workflow_name": name, "state": "RUNNING",
                                      "input": data.get("input"), "params": data.get("params"),
                                      "output": "{}", "polls": 0}
            return 201, {}, self._execution(ident)
        if method == "GET" and rest.startswith("executions/"):
            ident = rest.removeprefix("executions/")
            if ident not in self.executions:
                return 404, {}, {"faultstring": f"Execution not found [id={ident}]"}
            record = self.executions[ident]
            record["polls"] += 1
            if record["state"] == "RUNNING" and record["polls"] >= self.polls_to_finish:
                record["state"] = self.final_state
                record["output"] = json.dumps(self.final_output)
            return 200, {}, self._execution(ident)
        return 404, {}, {"faultstring": f"no route for {method} {rest}"}

    def _execution(self, ident: str) -> dict[str, Any]:
        return {k: v for k, v in self.executions[ident].items() if k != "polls"}


@pytest.fixture
def openstack() -> Iterator[FakeOpenStack]:
    """A :class:`FakeOpenStack` serving on 127.0.0.1 (``.url`` is its root)."""
    fake = FakeOpenStack()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            split = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode("utf-8") if length else ""
            status, headers, answer = fake.handle(self.command, split.path,
                                                  parse_qs(split.query), self.headers, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _serve

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Handler) as fake.url:
        yield fake
