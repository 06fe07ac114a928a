"""End to end on the local cloud (issue 4): three Linux instances run real shell
plans through the real agent; a redeploy without one of them destroys it and its
server; ``destroy`` leaves no sandbox and no agent behind.

Each application owns one LinuxMuranoInstance and records what its plan printed
(the working folder of the agent inside the server's sandbox).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

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
    (package / "Resources" / "scripts" / "where.sh").write_text("#!/bin/sh\npwd\n")
    return root


def _model(names: list[str]) -> dict:
    return {"?": {"id": "e0000000000000000000000000000001", "type": "io.murano.Environment"},
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
        [sys.executable, "-m", "murano_engine.cli", *args, "-l", str(tmp / "packages"),
         "--state", str(tmp / "state.json"), "--config", str(tmp / "engine.ini")],
        capture_output=True, text=True, timeout=300, cwd=tmp)


def _servers(cloud: Path) -> set[str]:
    folder = cloud / "servers"
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def test_three_instances_remove_one_then_destroy(tmp_path: Path):
    _package(tmp_path / "packages")
    cloud = tmp_path / "cloud"
    (tmp_path / "engine.ini").write_text(f"[local_cloud]\nstate_dir = {cloud}\n")
    (tmp_path / "three.json").write_text(json.dumps(_model(["n1", "n2", "n3"])))
    (tmp_path / "two.json").write_text(json.dumps(_model(["n1", "n3"])))
    threads_before = threading.active_count()

    done = _engine(tmp_path, "deploy", str(tmp_path / "three.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3/3 apps" in done.stdout
    apps = json.loads((tmp_path / "state.json").read_text())["Objects"]["applications"]
    sandboxes = {app["name"]: app["ranIn"] for app in apps}
    assert len(_servers(cloud)) == 3
    for where in sandboxes.values():  # each plan ran as a real process inside its sandbox
        assert where.startswith(str(cloud / "servers"))
    assert len(set(sandboxes.values())) == 3

    done = _engine(tmp_path, "deploy", str(tmp_path / "two.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    state = json.loads((tmp_path / "state.json").read_text())
    assert [a["name"] for a in state["Objects"]["applications"]] == ["n1", "n3"]
    assert len(_servers(cloud)) == 2
    removed = Path(sandboxes["n2"])
    assert not removed.exists(), "the removed instance's sandbox must be deleted"
    kept = state["Objects"]["applications"][0]
    assert kept["ranIn"] == sandboxes["n1"], "a kept instance keeps its server"

    done = _engine(tmp_path, "destroy")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _servers(cloud) == set()
    assert not (tmp_path / "state.json").exists()
    assert threading.active_count() == threads_before
