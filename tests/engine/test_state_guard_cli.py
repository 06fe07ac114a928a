"""The command line never loses an environment by default (real ``murano-engine``
processes on the local cloud, with the default state file ``murano-state.json``).

A deploy that fails on a bad configuration leaves no state file or journal; of two
deploys started 0.3 s apart one runs and the other is refused at once, naming the
first one's pid; a deploy of another environment onto the state file is refused
naming both; ``destroy`` then leaves no server behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from murano_engine.clouds.local.sandbox import missing_for_namespaces

pytestmark = pytest.mark.skipif(bool(missing_for_namespaces()),
                                reason=f"sandboxes need {missing_for_namespaces()}")

APP = """
Namespaces:
  =: t.slow
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
  said:
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
          Body: return slow().stdout
          Scripts:
            slow:
              Type: Application
              EntryPoint: slow.sh
      - $.said: $.server.agent.call($template, new(sys:Resources))
"""


def environment(root: Path, number: int) -> Path:
    """A model file of environment ``number`` with one server."""
    prefix = f"e{number:031d}"
    path = root / f"env{number}.json"
    path.write_text(json.dumps({
        "?": {"id": prefix + "0", "type": "io.murano.Environment"}, "name": f"env{number}",
        "defaultNetworks": {"environment": {
            "?": {"id": prefix + "1", "type": "io.murano.resources.NeutronNetwork"},
            "name": f"env{number}-net"}, "flat": None},
        "applications": [{"?": {"id": prefix + "2", "type": "t.slow.Node"},
                          "name": f"node{number}"}]}))
    return path


@pytest.fixture()
def site(tmp_path: Path) -> Path:
    package = tmp_path / "packages" / "t.slow"
    (package / "Classes").mkdir(parents=True)
    (package / "Resources" / "scripts").mkdir(parents=True)
    (package / "manifest.yaml").write_text(
        "Format: 1.4\nType: Application\nFullName: t.slow\nClasses:\n  t.slow.Node: Node.yaml\n")
    (package / "Classes" / "Node.yaml").write_text(textwrap.dedent(APP))
    (package / "Resources" / "scripts" / "slow.sh").write_text(
        "#!/bin/sh\nsleep 3\necho done\n")  # keeps the deploy running a while
    (tmp_path / "engine.ini").write_text(f"[local_cloud]\nstate_dir = {tmp_path / 'cloud'}\n")
    (tmp_path / "bad.ini").write_text(
        f"[local_cloud]\nstate_dir = {tmp_path / 'cloud'}\n"
        f"[engine]\nsigning_key = {tmp_path / 'key-folder.pem'}\n")  # not a file: unreadable
    (tmp_path / "key-folder.pem").mkdir()
    yield tmp_path
    if (tmp_path / "murano-state.json").exists():  # after a failed assertion only
        subprocess.run(command(tmp_path, "destroy"), cwd=tmp_path, capture_output=True,
                       timeout=120, env=environ(tmp_path))


def command(root: Path, *args: str, config: str = "engine.ini") -> list[str]:
    """``murano-engine ARGS`` with the default state file (no --state)."""
    return [sys.executable, "-m", "murano_engine.cli.main", *args, "-l", str(root / "packages"),
            "--config", str(root / config)]


def environ(root: Path) -> dict[str, str]:
    """The commands' environment: a journal key of the test's own."""
    return dict(os.environ, MURANO_ENGINE_JOURNAL_KEY_FILE=str(root / "keys" / "journal.key"))


def run(root: Path, *args: str, config: str = "engine.ini") -> subprocess.CompletedProcess:
    return subprocess.run(command(root, *args, config=config), cwd=root, capture_output=True,
                          text=True, timeout=300, env=environ(root))


def servers(root: Path) -> list[str]:
    folder = root / "cloud" / "servers"
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) \
        if folder.is_dir() else []


def test_the_default_state_file_keeps_its_one_environment(site: Path) -> None:
    first, second = environment(site, 1), environment(site, 2)
    state = site / "murano-state.json"

    # A run that fails before it begins leaves neither a state file nor a journal.
    failed = run(site, "deploy", str(second), config="bad.ini")
    assert failed.returncode == 1 and "key-folder.pem" in failed.stderr, failed.stderr
    assert not state.exists() and not (site / "murano-state.json.journal").exists()

    # Two deploys 0.3 s apart: one runs, the other is refused at once naming it.
    one = subprocess.Popen(command(site, "deploy", str(first)), cwd=site, text=True,
                           env=environ(site), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.3)
    two = subprocess.Popen(command(site, "deploy", str(first)), cwd=site, text=True,
                           env=environ(site), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    while one.poll() is None and two.poll() is None:
        time.sleep(0.05)
    refused, winner = (one, two) if one.returncode is not None else (two, one)
    assert winner.poll() is None, "the refused command ended only after the other one"
    _, refusal = refused.communicate()
    assert refused.returncode == 1, refusal
    assert refusal.strip() == (
        f"error: murano-state.json is in use by another murano-engine command (pid "
        f"{winner.pid}); wait for it to end, or stop it (Ctrl-C there, or kill -INT "
        f"{winner.pid}) and run this command again")
    out, err = winner.communicate(timeout=300)
    assert winner.returncode == 0, out + err
    assert len(servers(site)) == 1  # one run's server, none orphaned
    kept = state.read_bytes()

    # Another environment onto it is refused naming both; the first one stays.
    other = run(site, "deploy", str(second))
    assert other.returncode == 1
    assert other.stderr.strip() == (
        f"error: murano-state.json holds environment {'e' + '0' * 30 + '10'} (env1); "
        f"{second} is environment {'e' + '0' * 30 + '20'} (env2). Each environment has "
        "its own state file: deploy it with --state env2.state.json, or first remove the "
        "other with `murano-engine destroy --state murano-state.json`")
    assert state.read_bytes() == kept and len(servers(site)) == 1

    removed = run(site, "destroy")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert not state.exists() and servers(site) == []
    assert sorted(p.name for p in site.iterdir() if p.name.startswith("murano-state")) == []


def test_a_file_that_is_no_state_file_is_neither_removed_nor_overwritten(site: Path) -> None:
    """A model given as ``--state`` by mistake: ``destroy`` removed it."""
    model = environment(site, 3)
    kept = model.read_text()
    for action in (["destroy"], ["deploy", str(environment(site, 4))]):
        refused = run(site, *action, "--state", str(model))
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert f"{model} is not a state file" in refused.stderr
        assert model.read_text() == kept
    folder = run(site, "destroy", "--state", str(site))
    assert folder.returncode == 1 and "the state file is a folder" in folder.stderr
    assert "Traceback" not in folder.stderr
