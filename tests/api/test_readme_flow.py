"""The documentation's "Catalog and API" flow (docs/api.md) and its engine command lines
run as written (a scratch home, database and cloud)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from murano_engine.clouds.local.sandbox import missing_for_namespaces

REPO = Path(__file__).resolve().parents[2]


#: README and the pages of docs/ but the tutorial, which tests/docs/test_tutorial.py runs
DOCUMENTS = [REPO / "README.md", *sorted(p for p in (REPO / "docs").glob("*.md")
                                         if p.name != "tutorial.md")]


def readme_block(name: str) -> str:
    """The shell block the documentation marks with ``<!-- readme-test: NAME -->``."""
    text = "\n".join(path.read_text() for path in DOCUMENTS)
    found = re.search(rf"<!-- readme-test: {name} -->\n```sh\n(.*?)```", text, re.DOTALL)
    assert found, f"no page of the documentation has a block marked readme-test: {name}"
    return found.group(1)


def _remove_servers_left(cloud: Path) -> None:
    """After a failed flow only: the stacks its environment left."""
    if not (cloud / "stacks").is_dir() or not any((cloud / "stacks").iterdir()):
        return
    from murano_engine.clouds.base import remove_stack
    from murano_engine.clouds.local import LocalCloud
    local = LocalCloud(cloud, broker_url="amqp://guest:guest@127.0.0.1:5672//")
    try:
        for name in [p.name for p in (cloud / "stacks").iterdir()]:
            remove_stack(local, name)
    finally:
        local.close()


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.skipif(bool(missing_for_namespaces()), reason="the servers are sandboxes")
def test_the_catalog_and_api_flow_runs_as_written(tmp_path):
    if not _port_free(8082):
        pytest.skip("something else listens on 127.0.0.1:8082, the port docs/api.md uses")
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ, HOME=str(tmp_path), TMPDIR=str(tmp_path),
               PATH=f"{bin_dir}:{os.environ['PATH']}",
               MURANO_LOCAL_CLOUD_STATE_DIR=str(tmp_path / "cloud"))
    script = "set -eu\ntrap 'kill %1 2>/dev/null || true' EXIT\n" + readme_block("api")
    try:
        done = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=300)
    finally:
        _remove_servers_left(tmp_path / "cloud" / "projects" / "demo")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\| [0-9a-f]{32} \| success ", done.stdout), done.stdout
    assert re.search(r"10\.0\.\d+\.\d+:18700", done.stdout), done.stdout  # the model path
    servers = tmp_path / "cloud" / "projects" / "demo" / "servers"
    assert not [p for p in servers.iterdir() if not p.name.startswith(".")]
    assert (tmp_path / ".local" / "state" / "murano-engine" / "murano-api.sqlite").is_file()


def readme_commands() -> list[str]:
    """The documentation's ``murano-engine`` command lines that name real files (no
    placeholders)."""
    text = "\n".join(path.read_text() for path in DOCUMENTS)
    spans = [" ".join(span.split()) for span in
             re.findall(r"`(murano-engine\s+(?:deploy|destroy|action)\s[^`]*)`", text)]
    return sorted({s for s in spans if not re.search(r"\b[A-Z][A-Z_.]+\b|\.\.\.", s)})


@pytest.mark.skipif(bool(missing_for_namespaces()), reason="the servers are sandboxes")
def test_readmes_engine_command_lines_run_as_written(tmp_path):
    import shutil
    commands = readme_commands()
    assert len(commands) >= 3, commands  # the demo, HelloWeb and the HOT store
    for folder in ("examples", "dsl_packages"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}",
               MURANO_LOCAL_CLOUD_STATE_DIR=str(tmp_path / "cloud"))
    for number, command in enumerate(commands):
        state = re.search(r"--state (\S+)", command)
        state_file = state.group(1) if state else "murano-state.json"
        if "/" in state_file:
            (tmp_path / state_file).parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(command, shell=True, cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        removed = subprocess.run(f"murano-engine destroy --state {state_file}", shell=True,
                                 cwd=tmp_path, env=env, capture_output=True, text=True,
                                 timeout=300)
        assert done.returncode == 0, (command, done.stdout + done.stderr)
        assert removed.returncode == 0, (command, removed.stdout + removed.stderr)
        assert not (tmp_path / state_file).exists(), number
