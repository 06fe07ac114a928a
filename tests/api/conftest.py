"""A real ``murano-api`` on loopback (SQLite or PostgreSQL, in-process engine or RabbitMQ)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from kombu import Connection

from murano_engine.backend import db
from murano_engine.engine.config import load_config
from murano_engine.messaging.management import ManagementApi, management_url
from murano_engine.messaging.transport import prepare_transport
from tests.databases import throwaway_pg_database

PACKAGES = Path(__file__).parent / "packages"
#: The engine's traffic (tasks, results, reports): a virtual host of this test run's own,
#: apart from the guest agents' (``/``); made for the run, deleted after it. Named by
#: the process: test modules import this file again under another name.
ENGINE_VHOST = f"murano-engine-test-{os.getpid()}"
AMQP = f"amqp://guest:guest@127.0.0.1:5672/{ENGINE_VHOST}"
TOKENS = {"tok-a": ("proj-a", "alice", []), "tok-b": ("proj-b", "bob", []),
          "tok-admin": ("admin", "root", ["admin"])}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the process exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on port {port}")




@pytest.fixture(scope="session", autouse=True)
def engine_vhost() -> Iterator[str]:
    """The virtual host :data:`AMQP` names, made as the API makes it on first use, and
    deleted at the end of the run (with what is left in it)."""
    config = load_config(None, environ={})
    prepare_transport(AMQP, config)
    yield ENGINE_VHOST
    api = ManagementApi(management_url(config) or "")
    api.request("DELETE", f"/api/vhosts/{ENGINE_VHOST}", missing_ok=True)


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A fresh PostgreSQL database for this test run (dropped afterwards)."""
    with throwaway_pg_database() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database URL: a SQLite file of the test's own, then the run's PostgreSQL one."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/journal.sqlite"
    else:
        yield request.getfixturevalue("pg_database")


@pytest.fixture
def store(url: str) -> Iterator[db.Store]:
    """A store on ``url``, its schema migrated to the newest."""
    store = db.Store(url)
    db.upgrade(store.engine)
    yield store
    store.engine.dispose()


class ApiServer:
    """One ``murano-api`` process and helpers to talk to it."""

    def __init__(self, folder: Path, database: str, broker: bool | str,
                 environment_class: str = "com.example.apitest.Environment",
                 sections: dict[str, dict[str, str]] | None = None,
                 engine: dict[str, str] | None = None, **extra: str) -> None:
        self.folder = folder
        # broker: True for the shared vhost, or the URL of another (the test's own)
        self.transport = broker if isinstance(broker, str) else AMQP
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        suffix = uuid.uuid4().hex[:8]
        # the queues this server and its workers declare (deleted in stop())
        self.queues = [f"murano-tasks-{suffix}", f"murano-tasks-{suffix}.dead",
                       f"murano-results-{suffix}"] if broker else []
        (folder / "tokens.yaml").write_text("".join(
            f"{t}: {{project_id: {p}, user_id: {u}, roles: {r}}}\n"
            for t, (p, u, r) in TOKENS.items()))
        lines = ["[DEFAULT]", f"bind_port = {self.port}",
                 f"transport_url = {self.transport if broker else ''}",
                 "[database]", f"connection = {database}",
                 "[engine]", f"environment_class = {environment_class}",
                 f"task_queue = murano-tasks-{suffix}", f"result_queue = murano-results-{suffix}",
                 *(f"{k} = {v}" for k, v in (engine or {}).items()),
                 "[auth]", "token_file = tokens.yaml", "[murano]"]
        lines += [f"{k} = {v}" for k, v in extra.items()]
        # never the user's own local cloud (~/.local/state): engine runs open it
        sections = {"local_cloud": {"state_dir": str(folder / "cloud")}, **(sections or {})}
        for section, options in sections.items():
            lines += [f"[{section}]", *(f"{k} = {v}" for k, v in options.items())]
        self.config = folder / "api.conf"
        self.config.write_text("\n".join(lines) + "\n")
        self.log = open(folder / "api.log", "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "murano_engine.server.main", "--config-file",
             str(self.config)], stdout=self.log, stderr=subprocess.STDOUT)
        self.workers: list[subprocess.Popen] = []
        wait_for_port(self.port, self.process)
        self.http = requests.Session()

    def request(self, method: str, path: str, token: str = "tok-a", **kwargs: Any) -> Any:
        headers = {"X-Auth-Token": token, "Accept": "application/json",
                   **kwargs.pop("headers", {})}
        return self.http.request(method, self.url + path, headers=headers, timeout=30, **kwargs)

    def ok(self, method: str, path: str, token: str = "tok-a", **kwargs: Any) -> Any:
        response = self.request(method, path, token, **kwargs)
        assert response.status_code == 200, response.text
        return response.json() if response.content else None

    def murano(self, *args: str, token: str = "tok-a", stdin: str | None = None,
               check: bool = True) -> subprocess.CompletedProcess:
        # python-muranoclient's ``murano`` console script is muranoclient.shell:main;
        # running the module with this interpreter needs no venv bin on PATH.
        command = [sys.executable, "-m", "muranoclient.shell", "--os-no-client-auth",
                   "--murano-url", self.url, "--os-auth-token", token, *args]
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=60)
        if check:
            assert done.returncode == 0, done.stdout + done.stderr
        return done

    def start_worker(self) -> subprocess.Popen:
        worker = subprocess.Popen(
            [sys.executable, "-m", "murano_engine.cli.main", "worker", "--config-file",
             str(self.config)], stdout=self.log, stderr=subprocess.STDOUT)
        self.workers.append(worker)
        return worker

    def wait_env(self, env_id: str, states: tuple[str, ...] = ("ready", "deploy failure"),
                 timeout: float = 30, version: int = 0) -> dict:
        """The environment once its status is one of ``states`` (and its version at least
        ``version``: a deployment finished)."""
        env: dict = {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            env = self.ok("GET", f"/v1/environments/{env_id}")
            if env["status"] in states and env["version"] >= version:
                return env
            time.sleep(0.1)
        raise TimeoutError(f"environment {env_id} stayed {env['status']}")

    def stop(self) -> None:
        for process in [*self.workers, self.process]:
            if process.poll() is None:
                process.terminate()
        for process in [*self.workers, self.process]:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        self.http.close()
        self.log.close()
        if self.queues:
            with Connection(self.transport) as connection:
                channel = connection.channel()
                for name in self.queues:
                    channel.queue_delete(name)
            self.queues = []  # stopped once (a test may stop it before the fixture does)
        if os.environ.get("MURANO_API_TEST_LOG"):
            print((self.folder / "api.log").read_text())


@pytest.fixture
def start_api(tmp_path: Path) -> Iterator[Any]:
    started: list[ApiServer] = []

    def start(database: str | None = None, broker: bool | str = False,
              **extra: Any) -> ApiServer:
        folder = tmp_path / f"api{len(started)}"
        folder.mkdir()
        server = ApiServer(folder, database or f"sqlite:///{folder}/murano.sqlite", broker,
                           **extra)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
