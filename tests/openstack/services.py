"""Keystone, heat-api and heat-engine on loopback, run from the OpenStack virtualenv.

Their databases are on the machine's PostgreSQL (``mre_os_<pid>_keystone`` and
``_heat``) and Heat's RPC on a RabbitMQ vhost of its own (``mre_os_<pid>``), all
removed by :meth:`OpenStack.stop`; those of runs whose process is gone are
removed at the next start. Keystone is bootstrapped with an admin, a
``service`` project with Heat's own user, two projects each with a member user,
and the catalog's identity and orchestration endpoints. Keystone and heat-api
are served by uWSGI; heat-engine runs as itself.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import requests
from kombu import Connection
from kombu.exceptions import ChannelError

PG = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
PREFIX = "mre_os_"
REGION = "RegionOne"
DOMAIN = "default"


class NotHere(RuntimeError):
    """A service OpenStack needs is missing on this machine (the reason says which)."""


@dataclass(frozen=True)
class Account:
    """A keystone user with a role in a project (its password is the test's own)."""

    username: str
    password: str
    project_name: str
    project_id: str = ""
    user_id: str = ""

    def heat_section(self, auth_url: str) -> dict[str, str]:
        """The engine config's ``[heat]`` settings that authenticate as this account."""
        return {"auth_url": auth_url, "username": self.username, "password": self.password,
                "project_name": self.project_name, "user_domain_name": "Default",
                "project_domain_name": "Default", "region_name": REGION}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stale(names: list[str]) -> list[str]:
    """Names made by runs whose process is gone."""
    found = []
    for name in names:
        match = re.fullmatch(rf"{PREFIX}(\d+)(_.*)?", name)
        if match and not _alive(int(match.group(1))):
            found.append(name)
    return found


def _sql(*statements: str) -> list[Any]:
    with psycopg.connect(PG, autocommit=True) as connection:
        rows: list[Any] = []
        for statement in statements:
            cursor = connection.execute(statement)
            if cursor.description:
                rows.extend(cursor.fetchall())
        return rows


def _drop_databases(names: list[str]) -> None:
    for name in names:
        _sql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'",
             f'DROP DATABASE IF EXISTS "{name}"')


def _rabbitmqctl(*args: str) -> str:
    done = subprocess.run(["rabbitmqctl", "-q", *args], capture_output=True, text=True,
                          timeout=60)
    if done.returncode != 0:
        raise NotHere(f"rabbitmqctl {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def check_machine() -> None:
    """Raise :class:`NotHere` unless PostgreSQL and RabbitMQ (with rabbitmqctl) are here."""
    try:
        _sql("SELECT 1")
    except psycopg.Error as error:
        raise NotHere(f"PostgreSQL on 127.0.0.1:5432 (user postgres): {error}") from None
    if shutil.which("rabbitmqctl") is None:
        raise NotHere("rabbitmqctl is not installed (Heat gets a RabbitMQ vhost of its own)")
    try:
        socket.create_connection(("127.0.0.1", 5672), timeout=2).close()
    except OSError as error:
        raise NotHere(f"RabbitMQ on 127.0.0.1:5672: {error}") from None


class Keystone:
    """Admin calls to keystone's v3 API."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.http = requests.Session()
        self.http.headers.update({"X-Auth-Token": token, "Content-Type": "application/json"})

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        response = self.http.request(method, f"{self.url}{path}", json=body, timeout=30)
        if response.status_code >= 400:
            raise RuntimeError(f"keystone {method} {path}: {response.status_code} "
                               f"{response.text[:300]}")
        return response.json() if response.content else {}

    def find(self, kind: str, name: str) -> str:
        found = self.call("GET", f"/{kind}s?name={name}")[f"{kind}s"]
        if not found:
            raise LookupError(f"keystone has no {kind} {name}")
        return found[0]["id"]

    def create(self, kind: str, **fields: Any) -> str:
        return self.call("POST", f"/{kind}s", {kind: fields})[kind]["id"]

    def grant(self, project_id: str, user_id: str, role: str) -> None:
        role_id = self.find("role", role)
        self.call("PUT", f"/projects/{project_id}/users/{user_id}/roles/{role_id}")


def password_token(url: str, username: str, password: str, project: str) -> str:
    """A project-scoped token for a user of the default domain."""
    body = {"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": username, "domain": {"id": DOMAIN}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"id": DOMAIN}}}}}
    response = requests.post(f"{url}/auth/tokens", json=body, timeout=30)
    if response.status_code != 201:
        raise RuntimeError(f"keystone refused {username}: {response.status_code} "
                           f"{response.text[:300]}")
    return response.headers["X-Subject-Token"]


class OpenStack:
    """Keystone and Heat for one test session, in ``workdir``."""

    def __init__(self, venv: Path, workdir: Path) -> None:
        self.venv = venv
        self.workdir = workdir
        self.tag = f"{PREFIX}{os.getpid()}"
        self.keystone_port = free_port()
        self.heat_port = free_port()
        self.auth_url = f"http://127.0.0.1:{self.keystone_port}/v3"
        self.heat_base = f"http://127.0.0.1:{self.heat_port}/v1"
        self.admin = Account("admin", secrets.token_hex(8), "admin")
        self.accounts: dict[str, Account] = {}
        self._processes: dict[str, subprocess.Popen] = {}
        self._databases = [f"{self.tag}_keystone", f"{self.tag}_heat"]

    # --- lifecycle -------------------------------------------------------------
    def start(self) -> None:
        self._clean_stale()
        _sql(*(f'CREATE DATABASE "{name}"' for name in self._databases))
        _rabbitmqctl("add_vhost", self.tag)
        _rabbitmqctl("set_permissions", "-p", self.tag, "guest", ".*", ".*", ".*")
        self._start_keystone()
        self._populate_keystone()
        self._start_heat()

    def stop(self) -> None:
        for name in list(self._processes):
            self._end(name)
        _drop_databases(self._databases)
        try:
            _rabbitmqctl("delete_vhost", self.tag)
        except NotHere:
            pass

    def _clean_stale(self) -> None:
        names = [row[0] for row in _sql("SELECT datname FROM pg_database")]
        _drop_databases(_stale(names))
        for vhost in _stale(_rabbitmqctl("list_vhosts", "name").split()):
            _rabbitmqctl("delete_vhost", vhost)

    def _spawn(self, name: str, command: list[str], env: dict[str, str] | None = None) -> None:
        with open(self.workdir / f"{name}.out", "ab") as out:
            self._processes[name] = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=self.workdir, env={**os.environ, **(env or {})}, start_new_session=True)

    def _end(self, name: str) -> None:
        """Stop a service: uWSGI's master quits at SIGINT, heat-engine at SIGTERM."""
        process = self._processes.pop(name)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM if name == "heat-engine" else signal.SIGINT)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)

    def _wait_http(self, name: str, url: str, ok: tuple[int, ...] = (200, 300),
                   timeout: float = 120, headers: dict | None = None) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            process = self._processes[name]
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with {process.returncode}:\n"
                                   + self._tail(name))
            try:
                answer = requests.get(url, timeout=70, headers=headers)
                if answer.status_code in ok:
                    return
                last = f"{answer.status_code} {answer.text[:200]}"
            except requests.RequestException as error:
                last = str(error)
            time.sleep(0.3)
        raise RuntimeError(f"{name} did not answer {url} in {timeout}s ({last}):\n"
                           + self._tail(name))

    def _tail(self, name: str, lines: int = 30) -> str:
        text = ""
        for suffix in (".out", ".log"):
            path = self.workdir / f"{name}{suffix}"
            if path.exists():
                text += "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        return text

    def _uwsgi(self, name: str, port: int, module: str, env: dict[str, str] | None = None,
               argv: str = "") -> None:
        command = [str(self.venv / "bin" / "uwsgi"), "--http-socket", f"127.0.0.1:{port}",
                   "--module", module, "--virtualenv", str(self.venv), "--master",
                   "--processes", "1", "--threads", "8", "--die-on-term", "--need-app",
                   "--buffer-size", "65535", "--http-keepalive", "--add-header",
                   "Connection: close", "--disable-logging"]
        if argv:
            command += ["--pyargv", argv]
        self._spawn(name, command, env)

    def _manage(self, tool: str, config: Path, *args: str) -> None:
        done = subprocess.run([str(self.venv / "bin" / tool), "--config-file", str(config),
                               *args], capture_output=True, text=True, timeout=300,
                              cwd=self.workdir)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)} failed:\n{done.stdout}{done.stderr}")

    # --- keystone --------------------------------------------------------------
    def _start_keystone(self) -> None:
        folder = self.workdir / "keystone"
        for sub in ("fernet-keys", "fernet-receipts", "credential-keys"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        config = folder / "keystone.conf"
        config.write_text(
            f"[DEFAULT]\nlog_file = {self.workdir / 'keystone.log'}\n"
            f"[database]\nconnection = postgresql+psycopg2://postgres@127.0.0.1:5432/"
            f"{self._databases[0]}\n"
            "[token]\nprovider = fernet\nexpiration = 3600\n"
            f"[fernet_tokens]\nkey_repository = {folder / 'fernet-keys'}\n"
            f"[fernet_receipts]\nkey_repository = {folder / 'fernet-receipts'}\n"
            f"[credential]\nkey_repository = {folder / 'credential-keys'}\n")
        self._manage("keystone-manage", config, "db_sync")
        user = ["--keystone-user", str(os.getuid()), "--keystone-group", str(os.getgid())]
        self._manage("keystone-manage", config, "fernet_setup", *user)
        self._manage("keystone-manage", config, "credential_setup", *user)
        self._manage("keystone-manage", config, "bootstrap",
                     "--bootstrap-password", self.admin.password,
                     "--bootstrap-admin-url", self.auth_url,
                     "--bootstrap-internal-url", self.auth_url,
                     "--bootstrap-public-url", self.auth_url,
                     "--bootstrap-region-id", REGION)
        self._uwsgi("keystone", self.keystone_port, "keystone.wsgi.api:application",
                    env={"OS_KEYSTONE_CONFIG_FILES": str(config)})
        self._wait_http("keystone", self.auth_url)

    def _populate_keystone(self) -> None:
        admin = Keystone(self.auth_url, self.admin_token())
        for name, project in (("heat", "service"), ("demo", "murano-demo"),
                              ("other", "murano-other")):
            project_id = admin.create("project", name=project, domain_id=DOMAIN)
            account = Account(name, secrets.token_hex(8), project, project_id)
            user_id = admin.create("user", name=name, password=account.password,
                                   domain_id=DOMAIN, default_project_id=project_id)
            admin.grant(project_id, user_id, "admin" if name == "heat" else "member")
            self.accounts[name] = Account(name, account.password, project, project_id, user_id)
        admin_project = admin.find("project", "admin")
        admin_user = admin.find("user", "admin")
        self.admin = Account("admin", self.admin.password, "admin", admin_project, admin_user)
        service = admin.create("service", name="heat", type="orchestration", enabled=True)
        for interface in ("public", "internal", "admin"):
            admin.create("endpoint", service_id=service, interface=interface,
                         region_id=REGION, url=self.heat_base + "/%(tenant_id)s")

    def keystone_admin(self) -> Keystone:
        return Keystone(self.auth_url, self.admin_token())

    def service_user(self, name: str) -> Account:
        """A new user with the ``service`` role in the ``service`` project (one that
        validates tokens for an API, as keystonemiddleware's own user does)."""
        admin = self.keystone_admin()
        project_id = admin.find("project", "service")
        password = secrets.token_hex(8)
        user_id = admin.create("user", name=name, password=password, domain_id=DOMAIN)
        admin.grant(project_id, user_id, "service")
        return Account(name, password, "service", project_id, user_id)

    def short_lived_token(self, account: Account, seconds: int) -> tuple[str, datetime]:
        """A token of ``account`` that expires in ``seconds`` (Keystone ends a token
        no later than the application credential it was issued for) and its end."""
        ends = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=seconds)
        user = Keystone(self.auth_url, self.token(account))
        made = user.call("POST", f"/users/{account.user_id}/application_credentials", {
            "application_credential": {"name": secrets.token_hex(6),
                                       "expires_at": ends.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                                       "roles": [{"name": "member"}]}})["application_credential"]
        body = {"auth": {"identity": {"methods": ["application_credential"],
                                      "application_credential": {"id": made["id"],
                                                                 "secret": made["secret"]}}}}
        response = requests.post(f"{self.auth_url}/auth/tokens", json=body, timeout=30)
        if response.status_code != 201:
            raise RuntimeError(f"keystone refused the application credential: "
                               f"{response.status_code} {response.text[:300]}")
        expires = datetime.fromisoformat(response.json()["token"]["expires_at"])
        return response.headers["X-Subject-Token"], expires

    def revoke(self, token: str) -> None:
        """Revoke ``token`` in keystone (as its user logging out would)."""
        admin = self.keystone_admin()
        admin.http.headers["X-Subject-Token"] = token
        admin.call("DELETE", "/auth/tokens")

    def admin_token(self) -> str:
        return password_token(self.auth_url, "admin", self.admin.password, "admin")

    def token(self, account: Account) -> str:
        return password_token(self.auth_url, account.username, account.password,
                              account.project_name)

    # --- heat ------------------------------------------------------------------
    def _start_heat(self) -> None:
        heat = self.accounts["heat"]
        keystone_root = self.auth_url.removesuffix("/v3")
        config = self.workdir / "heat.conf"
        config.write_text(
            "[DEFAULT]\n"
            f"transport_url = rabbit://guest:guest@127.0.0.1:5672/{self.tag}\n"
            f"host = {self.tag}\nnum_engine_workers = 1\ngraceful_shutdown_timeout = 5\n"
            f"log_dir = {self.workdir}\n"
            f"auth_encryption_key = {secrets.token_hex(16)}\n"
            f"heat_metadata_server_url = http://127.0.0.1:{self.heat_port}\n"
            f"heat_waitcondition_server_url = {self.heat_base}/waitcondition\n"
            "region_name_for_services = RegionOne\n"
            f"[database]\nconnection = postgresql+psycopg2://postgres@127.0.0.1:5432/"
            f"{self._databases[1]}\n"
            "[keystone_authtoken]\n"
            f"www_authenticate_uri = {keystone_root}\nauth_url = {keystone_root}\n"
            "auth_type = password\n"
            f"username = {heat.username}\npassword = {heat.password}\n"
            "project_name = service\nuser_domain_id = default\nproject_domain_id = default\n"
            "service_token_roles_required = true\n"
            "[trustee]\nauth_type = password\n"
            f"auth_url = {keystone_root}\nusername = {heat.username}\n"
            f"password = {heat.password}\nuser_domain_id = default\n"
            f"[clients_keystone]\nauth_uri = {keystone_root}\n"
            f"[paste_deploy]\napi_paste_config = {self.venv / 'etc' / 'heat' / 'api-paste.ini'}\n"
            f"[oslo_concurrency]\nlock_path = {self.workdir / 'locks'}\n")
        self._manage("heat-manage", config, "db_sync")
        self._spawn("heat-engine", [str(self.venv / "bin" / "heat-engine"),
                                    "--config-file", str(config), "--log-file",
                                    str(self.workdir / "heat-engine.log")])
        self._uwsgi("heat-api", self.heat_port, "heat.wsgi.api:application",
                    argv=f"--config-file {config} --log-file {self.workdir / 'heat-api.log'}")
        self._wait_engine_queue()
        demo = self.accounts["demo"]
        # a stack list goes through heat-api to heat-engine: both answer
        self._wait_http("heat-api", f"{self.heat_base}/{demo.project_id}/stacks",
                        ok=(200,), headers={"X-Auth-Token": self.token(demo)}, timeout=180)

    def _wait_engine_queue(self, timeout: float = 120) -> None:
        """Until heat-engine consumes its RPC topic (a call sent before is lost)."""
        deadline = time.monotonic() + timeout
        with Connection(f"amqp://guest:guest@127.0.0.1:5672/{self.tag}") as connection:
            while time.monotonic() < deadline:
                if self._processes["heat-engine"].poll() is not None:
                    raise RuntimeError("heat-engine exited:\n" + self._tail("heat-engine"))
                try:
                    channel = connection.channel()
                    _, _, consumers = channel.queue_declare("engine", passive=True)
                    channel.close()
                    if consumers:
                        return
                except ChannelError:
                    pass
                time.sleep(0.3)
        raise RuntimeError("heat-engine never listened on its RPC topic:\n"
                           + self._tail("heat-engine"))
