"""End to end on the local cloud (issue 4): three Linux instances run real shell
plans through the real agent; a redeploy without one of them destroys it and its
server; ``destroy`` leaves no sandbox, no agent and no namespace behind.

Each application owns one LinuxMuranoInstance and records what its plan printed:
the hostname and working folder of the agent inside the server's sandbox (its
own UTS namespace, the server's folder mounted as /sandbox).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from murano_engine.clouds.local import netns
from murano_engine.engine.config import load_config
from murano_engine.messaging.identities import BrokerIdentities, identity_name

REPO = Path(__file__).resolve().parents[2]
ENV_ID = "e0000000000000000000000000000001"

APP = """
Namespaces:
  =: t.fleet
  std: io.murano
  res: io.murano.resources
  sys: io.murano.system
Name: Node
Extends: std:Application
Properties:
  name:
    Contract: $.string().notNull()
  server:
    Contract: $.class(res:LinuxMuranoInstance)
    Usage: Out
  ranIn:
    Contract: $.string()
    Usage: Out
Methods:
  deploy:
    Body:
      - If: $.server = null
        Then:
          - $.server: new(res:LinuxMuranoInstance, $this, name => $.name,
              image => 'debian-12', flavor => 'm1.small')
      - $.server.deploy()
      - $template:
          FormatVersion: '2.1.0'
          Body: return where().stdout
          Scripts:
            where:
              Type: Application
              EntryPoint: where.sh
      - $.ranIn: $.server.agent.call($template, new(sys:Resources))
      - $.reportDeployed(title => $.name, unitCount => 1)
"""


def _package(root: Path) -> Path:
    package = root / "t.fleet"
    (package / "Classes").mkdir(parents=True)
    (package / "Resources" / "scripts").mkdir(parents=True)
    (package / "manifest.yaml").write_text(
        "Format: 1.4\nType: Application\nFullName: t.fleet\n"
        "Classes:\n  t.fleet.Node: Node.yaml\n")
    (package / "Classes" / "Node.yaml").write_text(textwrap.dedent(APP))
    (package / "Resources" / "scripts" / "where.sh").write_text(
        "#!/bin/sh\necho \"$(hostname) $(pwd)\"\n")
    return root


def _model(names: list[str]) -> dict:
    return {"?": {"id": ENV_ID, "type": "io.murano.Environment"},
            "name": "fleet",
            "defaultNetworks": {"environment": {
                "?": {"id": "e0000000000000000000000000000002",
                      "type": "io.murano.resources.NeutronNetwork"},
                "name": "fleet-net"}, "flat": None},
            "applications": [{"?": {"id": f"a0000000000000000000000000000{name}",
                                    "type": "t.fleet.Node"}, "name": name}
                             for name in names]}


def _engine(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "murano_engine.cli.main", *args, "-l", str(tmp / "packages"),
         "--state", str(tmp / "state.json"), "--config", str(tmp / "engine.ini")],
        capture_output=True, text=True, timeout=300, cwd=tmp)


def _namespaces(server_ids: set[str]) -> list[str]:
    """The servers' network namespaces and their networks' that still exist."""
    names = {netns.server_namespace(s) for s in server_ids}
    for server_id in server_ids:
        names |= {netns.network_namespace(n) for n in _networks.get(server_id, ())}
    return sorted(n for n in names if netns.exists(n))


_networks: dict[str, set[str]] = {}


def _broker_users() -> set[str]:
    """The broker users of this test's environment's servers that exist now."""
    identities = BrokerIdentities.from_config(load_config(None, environ={}))
    assert identities is not None
    return {u for u in identities.users() if u.startswith(identity_name(f"e{ENV_ID}-h"))}


def _servers(cloud: Path) -> set[str]:
    folder = cloud / "servers"
    return {p.name for p in folder.iterdir() if not p.name.startswith(".")} \
        if folder.is_dir() else set()


def test_three_instances_remove_one_then_destroy(tmp_path: Path):
    _package(tmp_path / "packages")
    cloud = tmp_path / "cloud"
    (tmp_path / "engine.ini").write_text(f"[local_cloud]\nstate_dir = {cloud}\n")
    (tmp_path / "three.json").write_text(json.dumps(_model(["n1", "n2", "n3"])))
    (tmp_path / "two.json").write_text(json.dumps(_model(["n1", "n3"])))
    threads_before = threading.active_count()

    try:
        _deploy_remove_destroy(tmp_path, cloud)
    finally:  # the servers outlive the engine: after a failure, destroy them
        if (tmp_path / "state.json").exists():
            _engine(tmp_path, "destroy")
    # nothing left running here (a thread of an earlier test may end meanwhile)
    assert threading.active_count() <= threads_before


def _deploy_remove_destroy(tmp_path: Path, cloud: Path) -> None:
    done = _engine(tmp_path, "deploy", str(tmp_path / "three.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3/3 apps" in done.stdout
    apps = json.loads((tmp_path / "state.json").read_text())["Objects"]["applications"]
    servers = {app["name"]: app["server"]["openstackId"] for app in apps}
    assert set(servers.values()) == _servers(cloud)
    for server_id in servers.values():
        meta = json.loads((cloud / "servers" / server_id / "server.json").read_text())
        _networks[server_id] = {i["network_id"] for i in meta["interfaces"]}
    for app in apps:  # each plan ran as a real process inside its server's sandbox
        hostname, where = app["ranIn"].split()
        assert hostname == app["name"]
        assert where.startswith("/sandbox/")
        assert netns.pids(netns.server_namespace(servers[app["name"]]))
    assert len({a["server"]["ipAddresses"][0] for a in apps}) == 3
    assert len(set().union(*_networks.values())) == 1
    # each server's agent logs in as a broker user of its own
    users = {app["name"]: identity_name(f"e{ENV_ID}-h{app['?']['id']}".lower())
             for app in (a["server"] for a in apps)}
    assert _broker_users() == set(users.values())
    for app in apps:
        conf = (cloud / "servers" / servers[app["name"]] / "agent.conf").read_text()
        assert f"login = {users[app['name']]}\n" in conf

    done = _engine(tmp_path, "deploy", str(tmp_path / "two.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    state = json.loads((tmp_path / "state.json").read_text())
    assert [a["name"] for a in state["Objects"]["applications"]] == ["n1", "n3"]
    assert _servers(cloud) == {servers["n1"], servers["n3"]}
    assert not netns.exists(netns.server_namespace(servers["n2"])), \
        "the removed instance's namespace must go"
    assert _namespaces({servers["n1"]}), "the network stays while servers use it"
    kept = state["Objects"]["applications"][0]
    assert kept["server"]["openstackId"] == servers["n1"], "a kept instance keeps its server"
    assert _broker_users() == {users["n1"], users["n3"]}, "the removed server's user must go"

    done = _engine(tmp_path, "destroy")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _servers(cloud) == set()
    assert _broker_users() == set()
    assert _namespaces(set(servers.values())) == []
    assert not (tmp_path / "state.json").exists()
