"""End to end on the local cloud: HelloWeb, an application built on io.murano.applications.

``murano-engine deploy`` of examples/hello-web.json (two sandboxed servers):
the framework provisions the servers, installs and configures the service on
each, and reports every step as Murano's framework does; the application's
output lists the URLs, and each server answers its greeting on its own
address. A redeploy with the same settings does nothing; a new greeting
configures again without installing; the scaleOut action installs and
configures only the new server; destroy removes everything.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from murano_engine.clouds.local.sandbox import missing_for_namespaces
from tests.apps import kv_nodes
from tests.apps.kv_nodes import Node

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "hello-web.json"
REPORT = re.compile(r"^\[\s*[\d.]+s[^\]]*\]\s+(\w+)\s+[0-9a-f]{8} (.*)$")
pytestmark = pytest.mark.skipif(sys.platform != "linux" or bool(missing_for_namespaces()),
                                reason="HelloWeb's servers need sandboxes with addresses of "
                                       "their own (Linux network namespaces)")


def _engine(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "murano_engine.cli.main", *args, "-l", str(REPO / "dsl_packages"),
         "--state", str(tmp / "state.json"), "--config", str(tmp / "engine.ini")],
        capture_output=True, text=True, timeout=300, cwd=tmp)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _reports(output: str) -> list[str]:
    """The framework's and the application's status reports (not the instance notifier's)."""
    found = [m.group(2) for m in map(REPORT.match, output.splitlines()) if m]
    return [r for r in found
            if not re.search(r" is (running|released|deployed \(\d+ units?\))$", r)]


def _app(tmp: Path) -> dict:
    return json.loads((tmp / "state.json").read_text())["Objects"]["applications"][0]


def _servers(tmp: Path) -> list[Node]:
    return [Node(s["name"], s["openstackId"], s["ipAddresses"][0], 8080, True)
            for s in _app(tmp)["servers"]["items"]]


def _steps(verb: str, servers: list[str]) -> list:
    """A component step as reported: its start, then each server's two lines (as a set)."""
    if verb == "install":
        lines = [f"Began installing hello on {s}" for s in servers] + [
            f"hello is installed on {s}" for s in servers]
        return ["Installing hello", set(lines)]
    lines = [f"Began configuring hello on {s}" for s in servers] + [
        f"hello is configured at {s}" for s in servers]
    return ["Applying configuration of hello", set(lines)]


INSTALLED = "Finished installing hello (no errors encountered)"
CONFIGURED = "Finished configuring hello (no errors encountered)"


def _grouped(reports: list[str], count: int) -> list:
    """reports with the 2 * count per-server lines after a step's start made one set."""
    out: list = []
    rest = list(reports)
    while rest:
        line = rest.pop(0)
        out.append(line)
        if line in ("Installing hello", "Applying configuration of hello") and count:
            out.append(set(rest[:2 * count]))
            rest = rest[2 * count:]
    return out


def _check_serving(servers: list[Node], greeting: str) -> list[dict]:
    """Every server answers every other one's request with its greeting; their /info."""
    for asking in servers:
        for answering in servers:
            code, body = asking.request("/", address=answering.address)
            assert (code, body) == (200, f"{greeting} from {answering.name}")
    infos = []
    for node in servers:
        code, body = node.request("/info")
        assert code == 200, body
        infos.append(json.loads(body))
    return infos


def test_deploy_reconfigure_scale_destroy(tmp_path: Path):
    cloud = tmp_path / "cloud"
    (tmp_path / "engine.ini").write_text(
        f"[local_cloud]\nstate_dir = {cloud}\nisolation = namespaces\n")
    model = json.loads(EXAMPLE.read_text())
    (tmp_path / "hello.json").write_text(json.dumps(model))
    model["applications"][0]["greeting"] = "Good morning"
    (tmp_path / "morning.json").write_text(json.dumps(model))
    server_ids: list[str] = []
    networks: set[str] = set()
    try:
        done = _engine(tmp_path, "deploy", str(tmp_path / "hello.json"))
        servers = _servers(tmp_path)
        server_ids = [s.server_id for s in servers]
        networks = kv_nodes.network_ids(cloud, server_ids)
        names = ["hello-1", "hello-2"]
        assert [s.name for s in servers] == names
        urls = [f"http://{s.ip}:8080/" for s in servers]
        assert _grouped(_reports(done.stdout), 2) == [
            "Creating 2 servers", "Provisioning VM for Server 1", "Provisioning VM for Server 2",
            *_steps("install", names), INSTALLED,
            *_steps("configure", names),
            f'hello answers "Hello" at {" ".join(urls)}',
            CONFIGURED]
        assert _app(tmp_path)["urls"] == urls
        assert f"urls: {', '.join(urls)}" in done.stdout
        # the progress counts the application once it is deployed
        assert re.search(r"1/1 apps\] info +[0-9a-f]{8} io.murano.apps.linux.HelloWeb hello "
                         r"is deployed \(2 units\)", done.stdout), done.stdout
        assert [(i["installs"], i["configures"]) for i in _check_serving(servers, "Hello")] \
            == [(1, 1), (1, 1)]

        done = _engine(tmp_path, "deploy", str(tmp_path / "hello.json"))
        assert _reports(done.stdout) == [], "the same settings are not applied again"

        done = _engine(tmp_path, "deploy", str(tmp_path / "morning.json"))
        assert _grouped(_reports(done.stdout), 2) == [
            *_steps("configure", names),
            f'hello answers "Good morning" at {" ".join(urls)}',
            CONFIGURED]
        assert [(i["installs"], i["configures"]) for i in _check_serving(servers, "Good morning")] \
            == [(1, 2), (1, 2)]

        assert _app(tmp_path)["?"]["name"] == "hello"
        done = _engine(tmp_path, "action", "hello", "scaleOut")  # the object's name, or its id
        servers = _servers(tmp_path)
        server_ids = [s.server_id for s in servers]
        networks |= kv_nodes.network_ids(cloud, server_ids)
        assert [s.name for s in servers] == [*names, "hello-3"]
        assert server_ids[:2] == [s.server_id for s in servers[:2]]
        urls.append(f"http://{servers[2].ip}:8080/")
        assert _grouped(_reports(done.stdout), 1) == [
            "Provisioning VM for Server 3",
            *_steps("install", ["hello-3"]), INSTALLED,
            *_steps("configure", ["hello-3"]),
            f'hello answers "Good morning" at {" ".join(urls)}',
            CONFIGURED]
        assert _app(tmp_path)["urls"] == urls
        assert [(i["installs"], i["configures"]) for i in _check_serving(servers, "Good morning")] \
            == [(1, 2), (1, 2), (1, 1)]

        done = _engine(tmp_path, "destroy")
        # each server reports its release; the group, destroyed after them, adds nothing
        reports = [m.group(2) for m in map(REPORT.match, done.stdout.splitlines()) if m]
        assert sorted(reports) == [f"io.murano.resources.LinuxMuranoInstance hello-{n} is "
                                   f"released" for n in (1, 2, 3)], reports
        assert kv_nodes.namespaces_left(server_ids, networks) == []
        assert not any((cloud / "servers").iterdir()), "a server sandbox is left"
        assert not (tmp_path / "state.json").exists()
    finally:  # only if an assertion failed before destroy
        kv_nodes.force_cleanup(server_ids, networks)
