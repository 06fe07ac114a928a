"""Removing a server leaves nothing of it running: also a sandbox still starting, whose
processes are not yet where a removal looks for them (its control groups, its network)."""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import pytest

from murano_common import procfs
from murano_engine.clouds.local import netns, sandbox
from murano_engine.clouds.local.cgroups import ServerGroup, host_hierarchies
from murano_engine.clouds.local.flavors import FLAVORS
from murano_engine.clouds.local.sandbox import NamespaceLauncher, ProcessLauncher, ServerSpec
from tests.clouds.conftest import AGENT_CONF
from tests.clouds.test_sandboxes import NO_NAMESPACES

AMQP = "amqp://guest:guest@127.0.0.1:5672//"
#: a sandbox entry that waits at a gate (a file) before the real one makes anything
GATED_ENTER = """
import os, runpy, time

def main(args, start_agent, name_process):
    while not os.path.exists({gate!r}):
        time.sleep(0.01)
    runpy.run_path({real!r})["main"](args, start_agent, name_process)
"""


def _spec(root: Path) -> ServerSpec:
    server_id = str(uuid.uuid4())
    folder = root / "servers" / server_id
    folder.mkdir(parents=True)
    ini = AGENT_CONF.format(queue=f"removal-{server_id}", results="removal-results")
    return ServerSpec(server_id=server_id, hostname="starting", folder=folder, agent_ini=ini,
                      broker_url=AMQP, flavor=FLAVORS["m1.tiny"])


def _first_process(spec: ServerSpec) -> int:
    return int((spec.folder.parent / f".{spec.server_id}.pid").read_text().split()[0])


@NO_NAMESPACES
def test_a_server_removed_while_its_sandbox_starts_leaves_nothing_running(
        tmp_path, monkeypatch):
    gate = tmp_path / "gate"
    enter = tmp_path / "enter.py"
    enter.write_text(GATED_ENTER.format(gate=str(gate), real=str(sandbox.ENTER_SCRIPT)))
    monkeypatch.setattr(sandbox, "ENTER_SCRIPT", enter)
    spec = _spec(tmp_path)
    launcher = NamespaceLauncher()
    try:
        launcher.start(spec)
        first = _first_process(spec)
        assert procfs.running(first)  # waiting at the gate: in no group, no namespace yet

        launcher.discard(spec)
        assert not procfs.running(first)

        gate.touch()  # what a start still on its way would do now
        time.sleep(0.3)
        assert not any(path.exists() for path in ServerGroup(
            host_hierarchies()[0], spec.server_id).paths)
        assert not netns.exists(netns.server_namespace(spec.server_id))
    finally:
        gate.touch()
        launcher.close()


@NO_NAMESPACES
def test_a_started_sandbox_first_process_has_the_name_a_removal_knows_it_by(
        tmp_path):
    spec = _spec(tmp_path)
    launcher = NamespaceLauncher()
    try:
        launcher.start(spec)
        first = _first_process(spec)
        deadline = time.monotonic() + 10
        while sandbox._process_name(first) != sandbox.FIRST_PROCESS_NAME \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sandbox._process_name(first) == sandbox.FIRST_PROCESS_NAME
        launcher.detach(spec)  # as a dead engine leaves it: a later one knows only the file

        NamespaceLauncher().discard(spec)
        assert not procfs.running(first)
    finally:
        launcher.discard(spec)
        launcher.close()


@NO_NAMESPACES
@pytest.mark.parametrize("kept", ["{pid} {other_start}", "{pid}"])
def test_a_sandbox_pid_given_to_another_process_gets_that_process_spared(tmp_path, kept):
    spec = _spec(tmp_path)
    bystander = subprocess.Popen(["sleep", "60"])  # took the pid of a sandbox that ended
    try:
        (spec.folder.parent / f".{spec.server_id}.pid").write_text(
            kept.format(pid=bystander.pid, other_start=procfs.start_ticks(bystander.pid) - 1))
        launcher = NamespaceLauncher()
        if "other_start" in kept:  # the file tells that process from the sandbox's
            assert launcher.exited(spec)
        launcher.discard(spec)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_an_unisolated_agent_pid_given_to_another_process_gets_that_process_spared(
        tmp_path):
    spec = _spec(tmp_path)
    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        other_start = procfs.start_ticks(bystander.pid) - 1
        (spec.folder / "agent.pid").write_text(f"{bystander.pid} {other_start}")
        launcher = ProcessLauncher()
        assert not launcher.running(spec)
        launcher.stop(spec)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_a_group_removal_kills_a_process_that_joins_it_after_its_look(monkeypatch):
    hierarchies, missing = host_hierarchies()
    if hierarchies is None:
        pytest.skip(f"no control groups here: {missing}")
    group = ServerGroup(hierarchies, f"removal-{uuid.uuid4()}")
    group.create(FLAVORS["m1.tiny"], 64)
    late = subprocess.Popen(["sleep", "60"])
    looked = ServerGroup.pids

    def joined_after_the_first_look(self: ServerGroup) -> list[int]:
        if not hasattr(self, "looked"):  # the first look finds it empty...
            self.looked = True
            for path in self.paths:  # ...then a sandbox still starting joins it
                (path / "cgroup.procs").write_text(str(late.pid))
            return []
        return looked(self)

    monkeypatch.setattr(ServerGroup, "pids", joined_after_the_first_look)
    try:
        group.remove()
        assert late.wait(timeout=5) == -9
        assert not any(path.exists() for path in group.paths)
    finally:
        late.kill()
        late.wait()
        monkeypatch.undo()
        group.remove()
