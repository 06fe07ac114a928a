"""Ten projects deploying at the same moment through one ``murano-api`` (issue 47).

Each of ten projects (a token each) uploads HelloWeb, makes an environment and adds
HelloWeb with 5 servers (the local cloud, every isolation feature on); then all ten
deployments are asked for at the same moment and each is timed from its request to its
environment's ``ready``. Before them, one deployment alone is timed the same way (an
eleventh project, on the same API). Run twice: the in-process engine, and two
``murano-engine worker`` processes taking the tasks from RabbitMQ.

Figures: one deployment alone; the ten's fastest, median and slowest; and whether any
project waited for another's to finish (a deployment whose first report came after
another deployment had ended). Every environment is deleted after, and nothing of the
run may be left (servers, namespaces, broker users). ``--address-space GIB`` runs
murano-api (and the workers) under that ``ulimit -v``.

Targets (issue 47): every deployment ready, the slowest under 3 times one alone, no
project waiting for another's to finish, under an 8 GiB address-space limit; and one
environment of 200 servers deployed and deleted through murano-api under that limit
(``--large``).

    PYTHONPATH=. python benchmarks/projects_bench.py [--modes in-process workers] [--large N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import figures
import requests

from murano_engine.api.catalog import pack_folder
from murano_engine.clouds.local import netns
from murano_engine.engine.config import load_config
from murano_engine.messaging.management import ManagementApi, management_url
from murano_engine.messaging.transport import prepare_transport
from tests.helloweb import hello_web

REPO = Path(__file__).resolve().parent.parent
HELLOWEB = REPO / "dsl_packages" / "io.murano.apps.linux.HelloWeb"
PROJECTS = 10
SERVERS = 5
RUNS = int(os.environ.get("BENCH_RUNS", "1"))
SLOWEST_RATIO, ADDRESS_SPACE_GIB = 3.0, 8.0
SESSION = "X-Configuration-Session"


def _free_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Api:
    """A murano-api (and its workers) of the benchmark's own, on loopback."""

    def __init__(self, folder: Path, workers: int, address_space: float | None) -> None:
        self.folder = folder
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.vhost = f"murano-bench-{uuid.uuid4().hex[:8]}" if workers else ""
        transport = f"amqp://guest:guest@127.0.0.1:5672/{self.vhost}" if workers else ""
        if workers:
            prepare_transport(transport, load_config(None, environ={}))
        tokens = "".join(f"tok-{n}: {{project_id: proj-{n}, user_id: user-{n}, roles: []}}\n"
                         for n in range(PROJECTS + 1))
        (folder / "tokens.yaml").write_text(tokens)
        self.config = folder / "api.conf"
        self.config.write_text("\n".join([
            "[DEFAULT]", f"bind_port = {self.port}", f"transport_url = {transport}",
            "[database]", f"connection = sqlite:///{folder}/murano.sqlite",
            "[auth]", "token_file = tokens.yaml",
            "[local_cloud]", f"state_dir = {folder / 'cloud'}",
            "[quotas]", "servers = -1", ""]))
        self.log = open(folder / "api.log", "w")  # noqa: SIM115 - closed in stop()
        limit = None
        if address_space:
            limit = int(address_space * (1 << 30))

        def limited() -> None:
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        command = [sys.executable, "-m", "murano_engine.server.main", "--quiet",
                   "--config-file", str(self.config)]
        self.processes = [subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT,
                                           cwd=folder, preexec_fn=limited)]
        for _ in range(workers):
            self.processes.append(subprocess.Popen(
                [sys.executable, "-m", "murano_engine.cli.main", "worker", "--config-file",
                 str(self.config)], stdout=self.log, stderr=subprocess.STDOUT, cwd=folder,
                preexec_fn=limited))
        self.http = requests.Session()
        deadline = time.monotonic() + 30
        while True:
            try:
                self.http.get(self.url + "/v1/environments", timeout=1,
                              headers={"X-Auth-Token": "tok-0"})
                break
            except requests.ConnectionError:
                if time.monotonic() > deadline or self.processes[0].poll() is not None:
                    raise SystemExit(f"murano-api did not start:\n{self.log_text()}") from None
                time.sleep(0.1)

    def log_text(self) -> str:
        self.log.flush()
        return (self.folder / "api.log").read_text()[-4000:]

    def ok(self, method: str, path: str, token: str, **kwargs: Any) -> Any:
        headers = {"X-Auth-Token": token, "Accept": "application/json",
                   **kwargs.pop("headers", {})}
        response = self.http.request(method, self.url + path, headers=headers, timeout=60,
                                     **kwargs)
        if response.status_code != 200:
            raise SystemExit(f"{method} {path}: {response.status_code} {response.text}")
        return response.json() if response.content else None

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        self.log.close()
        if self.vhost:
            api = ManagementApi(management_url(load_config(None, environ={})) or "")
            api.request("DELETE", f"/api/vhosts/{self.vhost}", missing_ok=True)


def _prepare(api: Api, token: str, servers: int = SERVERS) -> str:
    """Upload HelloWeb, make an environment with HelloWeb of SERVERS servers in a session;
    the environment's path."""
    api.ok("POST", "/v1/catalog/packages", token,
           files={"p": ("helloweb.zip", pack_folder(HELLOWEB))})
    env = api.ok("POST", "/v1/environments", token,
                 json={"name": f"bench-{uuid.uuid4().hex[:6]}"})
    base = f"/v1/environments/{env['id']}"
    sid = api.ok("POST", f"{base}/configure", token)["id"]
    app = hello_web(servers)["applications"][0]
    api.ok("POST", f"{base}/services", token, headers={SESSION: sid}, json=app)
    return f"{base}|{sid}"


def _deploy(api: Api, token: str, prepared: str, timeout: float = 600) -> dict[str, float]:
    """Deploy and wait for ``ready``: when it was asked for, first reported, ready."""
    base, sid = prepared.split("|")
    asked = time.time()
    api.ok("POST", f"{base}/sessions/{sid}/deploy", token)
    deadline = time.monotonic() + timeout
    while True:
        env = api.ok("GET", base, token)
        if env["status"] in ("ready", "deploy failure") and env["version"] >= 1:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"{base} stayed {env['status']}:\n{api.log_text()}")
        time.sleep(0.1)
    ready = time.time()
    deployment = api.ok("GET", f"{base}/deployments", token)["deployments"][0]
    if env["status"] != "ready":
        reports = api.ok("GET", f"{base}/deployments/{deployment['id']}", token)["reports"]
        raise SystemExit(f"{base}: {env['status']}: "
                         + "\n".join(r["text"] for r in reports[-10:]))
    reports = api.ok("GET", f"{base}/deployments/{deployment['id']}", token)["reports"]
    started = min(_stamp(r["created"]) for r in reports) if reports else ready
    return {"asked": asked, "started": started, "ready": ready}


def _stamp(text: str) -> float:
    from datetime import UTC, datetime
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def _delete_all(api: Api, tokens: list[str]) -> None:
    for token in tokens:
        for env in api.ok("GET", "/v1/environments", token)["environments"]:
            api.ok("DELETE", f"/v1/environments/{env['id']}", token)
    deadline = time.monotonic() + 300
    for token in tokens:
        while api.ok("GET", "/v1/environments", token)["environments"]:
            if time.monotonic() > deadline:
                raise SystemExit(f"environments of {token} were not deleted:\n"
                                 f"{api.log_text()}")
            time.sleep(0.5)


def _process_cpu(processes: list[subprocess.Popen]) -> float:
    """CPU seconds the processes have used so far (/proc/PID/stat)."""
    total = 0
    for process in processes:
        try:
            fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _namespaces() -> set[str]:
    return set(os.listdir(netns.NAMESPACES)) if os.path.isdir(netns.NAMESPACES) else set()


def _left(folder: Path, environments: set[str], before: set[str]) -> list[str]:
    """What of the run is still on the host or the broker."""
    servers = folder / "cloud" / "servers"
    left = [f"server folder {p.name}" for p in servers.iterdir()] if servers.is_dir() else []
    left += [f"namespace {n}" for n in sorted(_namespaces() - before)]
    api = ManagementApi(management_url(load_config(None, environ={})) or "")
    left += [f"broker user {u['name']}" for u in api.request("GET", "/api/users") or []
             if any(u["name"].startswith(f"murano-agent-e{env}") for env in environments)]
    left += [f"queue {q['name']}" for q in api.request("GET", "/api/queues") or []
             if any(f"e{env}" in q["name"] for env in environments)]
    return left


def one_mode(workers: int, address_space: float | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="projects-bench-") as tmp:
        folder = Path(tmp)
        before = _namespaces()
        api = Api(folder, workers, address_space)
        tokens = [f"tok-{n}" for n in range(PROJECTS + 1)]
        environments: set[str] = set()
        try:
            prepared = {token: _prepare(api, token) for token in tokens}
            environments = {p.split("|")[0].rsplit("/", 1)[1] for p in prepared.values()}
            cpu_before = figures.host_cpu()
            alone = _deploy(api, tokens[-1], prepared[tokens[-1]])
            alone_s = alone["ready"] - alone["asked"]
            alone_cpu = figures.host_cpu() - cpu_before
            results: dict[str, dict[str, float]] = {}
            failures: list[BaseException] = []
            gate = threading.Barrier(PROJECTS)

            def project(token: str) -> None:
                try:
                    gate.wait()
                    results[token] = _deploy(api, token, prepared[token])
                except BaseException as exc:  # noqa: BLE001 - reported below
                    failures.append(exc)

            threads = [threading.Thread(target=project, args=(t,)) for t in tokens[:PROJECTS]]
            cpu_before, api_before = figures.host_cpu(), _process_cpu(api.processes)
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            host_cpu = figures.host_cpu() - cpu_before
            api_cpu = _process_cpu(api.processes) - api_before
            if failures:
                raise failures[0]
            took = sorted(r["ready"] - r["asked"] for r in results.values())
            first_ready = min(r["ready"] for r in results.values())
            waited = [t for t, r in results.items() if r["started"] > first_ready]
        finally:
            try:
                _delete_all(api, tokens)
            finally:
                api.stop()
        left = _left(folder, environments, before)
        if left:
            kept = Path(tempfile.gettempdir()) / "projects-bench-api.log"
            kept.write_text((folder / "api.log").read_text())
            raise SystemExit(f"left after the run: {', '.join(left[:10])} (the log: {kept})")
        return {"alone": alone_s, "fastest": took[0], "median": statistics.median(took),
                "slowest": took[-1], "waited": len(waited), "host_cpu": host_cpu,
                "api_cpu": api_cpu, "alone_cpu": alone_cpu}


def large(servers: int, address_space: float | None) -> dict[str, float]:
    """One project deploying ``servers`` servers through murano-api (in-process engine):
    its deploy and delete times."""
    with tempfile.TemporaryDirectory(prefix="projects-bench-") as tmp:
        folder = Path(tmp)
        before = _namespaces()
        api = Api(folder, 0, address_space)
        environments: set[str] = set()
        try:
            prepared = _prepare(api, "tok-0", servers)
            environments = {prepared.split("|")[0].rsplit("/", 1)[1]}
            deployed = _deploy(api, "tok-0", prepared, timeout=900)
            started = time.monotonic()
        finally:
            try:
                _delete_all(api, ["tok-0"])
            finally:
                api.stop()
        deleted = time.monotonic() - started
        left = _left(folder, environments, before)
        if left:
            raise SystemExit(f"left after the run: {', '.join(left[:10])}")
        return {"deploy": deployed["ready"] - deployed["asked"], "delete": deleted}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", nargs="+", default=["in-process", "workers"],
                        choices=["in-process", "workers"])
    parser.add_argument("--large", type=int, default=200,
                        help="servers of one environment deployed through murano-api "
                             "under the same limit (0: not run)")
    parser.add_argument("--address-space", type=float, default=ADDRESS_SPACE_GIB,
                        help="GiB of address space murano-api and workers may map "
                             "(ulimit -v; 0: no limit)")
    options = parser.parse_args()
    from murano_engine.clouds.local.sandbox import missing_for_namespaces
    missing = missing_for_namespaces()
    if missing:
        print(f"skipped: this host lacks {', '.join(missing)}")
        return 0
    limit = options.address_space or None
    figures.method(f"{PROJECTS} projects each deploying HelloWeb with {SERVERS} servers at "
                   f"the same moment through one murano-api (local cloud, every isolation "
                   f"feature on), after one deployment alone; {RUNS} run(s) per mode; "
                   f"murano-api and workers under ulimit -v "
                   f"{f'{limit:g} GiB' if limit else 'unlimited'}")
    for mode in options.modes:
        samples = [one_mode(2 if mode == "workers" else 0, limit) for _ in range(RUNS)]
        for s in samples:
            print(f"  {mode}: alone {s['alone']:.1f} s; ten at once: fastest "
                  f"{s['fastest']:.1f} s, median {s['median']:.1f} s, slowest "
                  f"{s['slowest']:.1f} s; projects that waited for another's end: "
                  f"{s['waited']}; CPU meanwhile {s['host_cpu']:.1f} s on the host, "
                  f"{s['api_cpu']:.1f} s of it murano-api's (and its workers')", flush=True)
            # The ten cannot all be ready before their CPU is spent on this host's cores:
            # that floor, over one alone, bounds the ratio below whatever the engine does.
            floor = s["host_cpu"] / (os.cpu_count() or 1)
            print(f"  {mode}: one alone used {s['alone_cpu']:.1f} s of host CPU in "
                  f"{s['alone']:.1f} s; the ten {s['host_cpu']:.1f} s "
                  f"({s['host_cpu'] / s['alone_cpu']:.1f}x one alone's), which "
                  f"{os.cpu_count()} cores spend in {floor:.1f} s at best: "
                  f"{floor / s['alone']:.1f}x one alone", flush=True)
        figures.figure(f"{mode}: slowest of ten over one alone",
                       [s["slowest"] / s["alone"] for s in samples], "x", SLOWEST_RATIO)
        figures.figure(f"{mode}: projects that waited for another's to finish",
                       [s["waited"] for s in samples], "", 0.5)
    if options.large:
        done = large(options.large, limit)
        print(f"  one environment of {options.large} servers through murano-api: deployed "
              f"in {done['deploy']:.1f} s, deleted in {done['delete']:.1f} s", flush=True)
    figures.finish()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
