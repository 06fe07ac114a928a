"""Environments outlive their files: the local cloud's register knows what each one made.

From outside, on examples/linux-cluster.json (two servers, each script logging its
run, as in test_durable_deploy): a state file or journal lost, torn or distrusted, a
host-side helper killed, two deploys of one environment at once, Ctrl-C in the first
moments, a wrong image fixed in the model. Each ends with nothing of the environment on
the host (server folders, namespaces, loop devices, control groups, mounts,
processes, broker users, queues) and no step run twice.
"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from murano_engine.clouds.local import netns
from murano_engine.clouds.local.cgroups import ServerGroup, host_hierarchies
from murano_engine.clouds.local.sandbox import FIRST_PROCESS_NAME
from tests.apps import kv_nodes
from tests.apps.test_durable_deploy import (
    Site,
    _agent_login,
    _agent_queues,
    _identities,
    _processes_mentioning,
    _queue_exists,
)

ENVIRONMENT = json.loads((Path(__file__).resolve().parents[2] / "examples"
                          / "linux-cluster.json").read_text())["?"]["id"]


@dataclass
class Traces:
    """What a site's environment has on the host and the broker while it lives."""

    servers: list[str] = field(default_factory=list)
    networks: set[str] = field(default_factory=set)
    inside: list[int] = field(default_factory=list)
    users: set[str] = field(default_factory=set)
    queues: set[str] = field(default_factory=set)

    def add(self, site: Site) -> None:
        folders = site.servers()
        self.servers += [p.name for p in folders if p.name not in self.servers]
        self.networks |= kv_nodes.network_ids(site.cloud, [p.name for p in folders])
        self.inside += [pid for p in folders for pid in netns.pids(
            netns.server_namespace(p.name))]
        self.users |= {_agent_login(p / "agent.conf") for p in folders
                       if (p / "agent.conf").exists()}
        self.queues |= {q for p in folders if (p / "agent.conf").exists()
                        for q in _agent_queues(p / "agent.conf")}


def traces_of(site: Site) -> Traces:
    traces = Traces()
    traces.add(site)
    assert traces.servers and traces.users and traces.queues, "nothing deployed"
    return traces


def assert_nothing_left(site: Site, traces: Traces) -> None:
    """Nothing of the site's environment is on the host or the broker any more."""
    assert not _entries(site.cloud / "servers"), "a server's folder is left"
    assert not _entries(site.cloud / "stacks"), "a stack is left"
    assert not [p for p in _entries(site.cloud / "environments") if p.suffix == ".json"], \
        "a record is left"
    assert not _entries(site.cloud / "signing-keys"), "a signing key is left"
    assert kv_nodes.namespaces_left(traces.servers, traces.networks) == []
    assert kv_nodes.alive(traces.inside) == [], "a sandbox's process outlived destroy"
    assert not _processes_mentioning(str(site.cloud)), "a process outlived destroy"
    assert str(site.cloud) not in Path("/proc/self/mountinfo").read_text(), "a mount is left"
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    assert str(site.cloud) not in loops, "a loop device is left"
    hierarchies = host_hierarchies()[0]
    assert hierarchies is not None
    assert not [p for s in traces.servers for p in ServerGroup(hierarchies, s).paths
                if p.exists()], "a control group is left"
    assert not [q for q in traces.queues if _queue_exists(q)], "a queue is left"
    assert not traces.users & set(_identities().users()), "a broker user is left"


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.iterdir()) if folder.is_dir() else []


def engine(site: Site, *args: str, state: Path | None = None) -> subprocess.CompletedProcess:
    """A command on ``state`` (the site's state file by default); not checked."""
    command = site.command(*args)
    if state is not None:
        command[command.index("--state") + 1] = str(state)
    return subprocess.run(command, capture_output=True, text=True, timeout=300,
                          cwd=site.root)


def destroy_environment(site: Site) -> subprocess.CompletedProcess:
    command = site.command("destroy", "--environment", ENVIRONMENT)
    at = command.index("--state")
    del command[at:at + 2]
    at = command.index("-l")
    del command[at:at + 2]
    return subprocess.run(command, capture_output=True, text=True, timeout=300,
                          cwd=site.root)


def _cleanup(site: Site) -> None:
    """After a failed assertion only: remove what the site's runs left."""
    destroy_environment(site)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> tuple[dict, collections.Counter, int]:
    """An uninterrupted deploy: its outputs, its script runs and its number of reports."""
    site = Site(tmp_path_factory.mktemp("uninterrupted"))
    try:
        done = site.run("deploy", str(site.model))
        result = (site.outputs(), site.steps(),
                  sum(line.startswith("[") for line in done.stdout.splitlines()))
        site.run("destroy")
    finally:
        _cleanup(site)
    return result


def test_killed_at_each_report_then_both_files_lost_destroy_environment_removes_all(
        tmp_path, uninterrupted):
    _, _, reports = uninterrupted

    def kill_at(report: int) -> None:
        site = Site(tmp_path / f"kill-{report}")
        try:
            site.deploy_until(report, signal.SIGKILL).wait(30)
            traces = Traces()  # (no server yet at the first reports)
            traces.add(site)
            site.state.unlink(missing_ok=True)
            (site.root / "state.json.journal").unlink()

            done = destroy_environment(site)

            assert done.returncode == 0, done.stdout + done.stderr
            assert_nothing_left(site, traces)
        finally:
            _cleanup(site)

    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        for done in [pool.submit(kill_at, report) for report in range(1, reports + 1)]:
            done.result()


def test_a_deploy_whose_state_file_is_lost_is_refused_and_adopt_makes_one_copy(
        tmp_path, uninterrupted):
    outputs, steps, _ = uninterrupted
    site = Site(tmp_path)
    try:
        site.run("deploy", str(site.model))
        traces = traces_of(site)
        site.state.unlink()

        refused = engine(site, "deploy", str(site.model))

        assert refused.returncode == 1
        assert f"destroy --environment {ENVIRONMENT}" in refused.stderr, refused.stderr
        assert "--adopt" in refused.stderr and "second copy" in refused.stderr
        assert len(site.servers()) == 2 and not site.state.exists()

        adopted = site.run("deploy", str(site.model), "--adopt")
        assert "taking environment" in adopted.stdout
        assert len(site.servers()) == 2, "a second copy of the environment was made"
        assert site.outputs() == outputs and site.steps() == steps
        assert kv_nodes.alive(traces.inside) == [], "the first copy's servers still run"
        traces.add(site)
        site.run("destroy")
        assert_nothing_left(site, traces)
    finally:
        _cleanup(site)


def test_a_tampered_journal_without_its_key_is_not_acted_on_and_destroy_removes_all(
        tmp_path):
    site = Site(tmp_path)
    key = tmp_path / "keys" / "journal.key"
    with open(site.root / "engine.ini", "a") as config:
        config.write(f"[engine]\njournal_key_file = {key}\n")
    try:
        site.deploy_until(4, signal.SIGKILL).wait(30)  # servers up, no state file yet
        traces = traces_of(site)
        journal = site.root / "state.json.journal"
        lines = journal.read_bytes().splitlines(keepends=True)
        lines[1] = lines[1].replace(b'"k":"', b'"k":"x', 1)  # one entry edited
        journal.write_bytes(b"".join(lines))
        key.unlink()
        refused = engine(site, "deploy", str(site.model))
        assert refused.returncode == 1 and "Nothing was run from it" in refused.stderr
        assert "destroy --state" in refused.stderr, refused.stderr

        done = engine(site, "destroy")

        assert done.returncode == 0, done.stdout + done.stderr
        assert "nothing is run from it" in done.stderr
        assert not journal.exists() and not site.state.exists()
        assert_nothing_left(site, traces)
    finally:
        _cleanup(site)


def test_a_full_state_folder_during_destroy_then_destroy_with_space_back(tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "small-state", str(small)],
                   check=True)
    site = Site(tmp_path / "site")
    site.state = small / "state.json"
    try:
        site.run("deploy", str(site.model))
        traces = traces_of(site)
        filler = small / "filler"
        with open(filler, "wb") as stream:  # until 8 KiB are left
            stream.write(b"x" * (os.statvfs(small).f_bavail * os.statvfs(small).f_frsize
                                 - 8192))
        assert os.statvfs(small).f_bavail * os.statvfs(small).f_frsize <= 8192

        full = engine(site, "destroy", state=site.state)

        assert full.returncode == 1, full.stdout + full.stderr
        assert "No space left on device" in full.stderr and "Traceback" not in full.stderr
        filler.unlink()
        done = engine(site, "destroy", state=site.state)
        assert done.returncode == 0, done.stdout + done.stderr
        assert not site.state.exists() and not list(small.iterdir())
        assert_nothing_left(site, traces)
    finally:
        _cleanup(site)
        subprocess.run(["umount", "-l", str(small)], check=False)


def test_a_sandbox_host_side_process_killed_mid_deploy_is_not_the_server_s_death(
        tmp_path, uninterrupted):
    outputs, steps, _ = uninterrupted
    site = Site(tmp_path, slow="configure.sh")
    try:
        engine_run = site.deploy_until(4)  # stage 2: configure.sh runs on both nodes
        site.wait_for_script("configure.sh")
        helpers = []
        for server in site.servers():
            pid = int((server.parent / f".{server.name}.pid").read_text().split()[0])
            assert Path(f"/proc/{pid}/comm").read_text().strip() == FIRST_PROCESS_NAME
            helpers.append(pid)
            os.kill(pid, signal.SIGKILL)

        out, err = engine_run.communicate(timeout=120)

        assert engine_run.returncode == 0, out + err
        assert kv_nodes.alive(helpers) == []
        assert "ERROR" not in out and site.outputs() == outputs and site.steps() == steps
        again = site.run("deploy", str(site.model))  # and every rerun
        assert "ERROR" not in again.stdout
        traces = traces_of(site)
        site.run("destroy")
        assert_nothing_left(site, traces)
    finally:
        _cleanup(site)


def test_two_deploys_of_one_environment_with_two_state_files_make_one_copy(
        tmp_path, uninterrupted):
    outputs, steps, _ = uninterrupted
    site = Site(tmp_path)
    other = tmp_path / "other.json"
    try:
        both = [subprocess.Popen(site.command("deploy", str(site.model)), cwd=site.root,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)]
        command = site.command("deploy", str(site.model))
        command[command.index("--state") + 1] = str(other)
        both.append(subprocess.Popen(command, cwd=site.root, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True))
        ended = []
        for run in both:
            out, err = run.communicate(timeout=300)
            ended.append((run.returncode, out, err))

        assert sorted(code for code, _, _ in ended) == [0, 1], ended
        refusal = next(err for code, _, err in ended if code == 1)
        assert re.search(r"in use by another murano-engine command \(pid \d+\)|is held by "
                         r"the state file", refusal), refusal
        assert len(site.servers()) == 2, "the environment is on the host twice"
        winner = site.state if site.state.exists() else other
        traces = traces_of(site)
        engine(site, "destroy", state=winner)
        assert_nothing_left(site, traces)
    finally:
        _cleanup(site)


def test_a_deploy_after_a_journal_only_holder_is_refused_naming_it(tmp_path):
    site = Site(tmp_path)
    other = tmp_path / "other.json"
    try:
        site.deploy_until(3, signal.SIGKILL).wait(30)  # servers up, only a journal
        assert not site.state.exists() and (site.root / "state.json.journal").exists()
        traces = traces_of(site)

        refused = engine(site, "deploy", str(site.model), state=other)

        assert refused.returncode == 1
        assert f"--state {site.state}" in refused.stderr, refused.stderr
        assert len(site.servers()) == 2 and not other.exists()
        site.run("destroy")
        assert_nothing_left(site, traces)
    finally:
        _cleanup(site)


def _wait_for_exec(pid: int) -> None:
    """Until the child ``pid`` runs the engine's command: between fork and exec it still
    has this process's signal handlers, and a SIGINT then would be this process's
    handler's, lost with the child's copy of it at exec (no Ctrl-C can land there)."""
    deadline = time.monotonic() + 10
    while b"murano_engine.cli.main" not in Path(f"/proc/{pid}/cmdline").read_bytes():
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.001)


def test_ctrl_c_from_the_first_moments_stops_cleanly(tmp_path, uninterrupted):
    _, steps, _ = uninterrupted

    def interrupt_at(delay: float) -> None:
        site = Site(tmp_path / f"int-{delay:.2f}")
        try:
            run = subprocess.Popen(site.command("deploy", str(site.model)), cwd=site.root,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            _wait_for_exec(run.pid)  # a signal before it lands on the forked test process
            time.sleep(delay)
            run.send_signal(signal.SIGINT)
            out, err = run.communicate(timeout=120)
            # Before any of the engine's code runs, Python's own start-up ends: by the
            # signal itself, or (while it imports site) as a fatal error naming it.
            python_start = run.returncode == -signal.SIGINT or (
                run.returncode == 1 and "Fatal Python error" in err
                and "KeyboardInterrupt" in err and "murano_engine" not in err)
            if python_start:
                assert not out and not (site.root / "state.json.journal").exists()
                assert not site.state.exists(), err
            else:
                assert run.returncode == 130, f"at {delay} s: {run.returncode} {out} {err}"
                assert "Traceback" not in err
                assert "Run the same command to carry on" in err, err
            site.run("deploy", str(site.model))
            assert site.steps() == steps, f"interrupted at {delay} s"
            traces = traces_of(site)
            site.run("destroy")
            assert_nothing_left(site, traces)
        finally:
            _cleanup(site)

    # A process started in the background by a non-interactive shell (as CI may start
    # this one) ignores SIGINT, and its children start ignoring it too, until they set
    # a handler: a Ctrl-C could not reach them before. Handled here, SIGINT is back to
    # its default in every child, as in a terminal.
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            for done in [pool.submit(interrupt_at, n * 0.05) for n in range(15)]:
                done.result()
    finally:
        signal.signal(signal.SIGINT, ignored)


def test_a_wrong_image_fixed_in_the_model_deploys_as_the_model_says(tmp_path, uninterrupted):
    outputs, steps, _ = uninterrupted
    site = Site(tmp_path)
    right = site.model.read_text()
    model = json.loads(right)
    model["applications"][0]["image"] = "debian-13"
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(model))
    try:
        failed = engine(site, "deploy", str(wrong))
        assert failed.returncode == 1
        assert "image 'debian-13' could not be found" in failed.stdout + failed.stderr
        assert "run `murano-engine deploy" in failed.stderr  # what to do next
        site.model.write_text(right)  # fixed

        site.run("deploy", str(site.model))

        assert site.outputs() == outputs and site.steps() == steps
        traces = traces_of(site)
        site.run("destroy")
        assert_nothing_left(site, traces)
    finally:
        _cleanup(site)
