"""Durable deployments: kill the engine anywhere, deploy again, nothing lost, no step twice.

examples/linux-cluster.json (two key-value nodes in sandboxes) is deployed
with a copy of the package whose scripts append their name to a log in their
server's folder. The engine is killed (SIGKILL) at each of its report lines
in turn, or stopped with a real Ctrl-C; running ``deploy`` again resumes from
the journal. The outputs equal an uninterrupted run's, every script ran as
often as in the uninterrupted run (once per step), and ``destroy`` leaves no
process, sandbox, stack or queue behind.
"""

from __future__ import annotations

import collections
import concurrent.futures
import configparser
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import kombu
import pytest

from murano_engine.clouds.local import netns
from murano_engine.clouds.local.sandbox import missing_for_namespaces
from murano_engine.engine.config import load_config
from murano_engine.engine.journal import TAMPERED, Chain
from murano_engine.messaging.identities import USER_PREFIX, BrokerIdentities
from tests import processes
from tests.apps import kv_nodes
from tests.tcp_forwarder import TcpForwarder

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "linux-cluster.json"
PACKAGE = "io.murano.apps.linux.ReplicatedKV"
AMQP = "amqp://guest:guest@127.0.0.1:5672//"
LOG_LINE = 'mkdir -p "$KV_DATA" && echo "$(basename "$0")" >> "$KV_DATA/../steps.log"\n'

pytestmark = pytest.mark.skipif(bool(missing_for_namespaces()),
                                reason=f"sandboxes need {missing_for_namespaces()}")


class Site:
    """A folder with the logging package, an engine config and a state file."""

    def __init__(self, root: Path, slow: str = "", broker_port: int = 5672) -> None:
        self.root = root
        self.packages = root / "packages"
        package = self.packages / PACKAGE
        shutil.copytree(REPO / "dsl_packages" / PACKAGE, package)
        for script in (package / "Resources" / "scripts").glob("*.sh"):
            text = script.read_text()
            pause = "sleep 1.5\n" if script.name == slow else ""
            if ". ./common.sh\n" in text:
                script.write_text(text.replace(". ./common.sh\n",
                                               ". ./common.sh\n" + LOG_LINE + pause))
        self.cloud = root / "cloud"
        (root / "engine.ini").write_text(
            f"[local_cloud]\nstate_dir = {self.cloud}\n"
            f"broker_url = amqp://guest:guest@127.0.0.1:{broker_port}//\n"
            f"[rabbitmq]\nhost = 127.0.0.1\nport = {broker_port}\n")
        self.state = root / "state.json"
        # The example's shape, with the values the tests rely on (users may edit it).
        model = json.loads(EXAMPLE.read_text())
        model["applications"][0].update(name="kv", nodeCount=2)
        self.model = root / "model.json"
        self.model.write_text(json.dumps(model))

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "murano_engine.cli.main", *args, "-l", str(self.packages),
                "--state", str(self.state), "--config", str(self.root / "engine.ini")]

    def run(self, *args: str) -> subprocess.CompletedProcess:
        done = subprocess.run(self.command(*args), capture_output=True, text=True,
                              timeout=300, cwd=self.root)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    def deploy_until(self, report: int, sig: int | None = None) -> subprocess.Popen:
        """Start a deploy and send ``sig`` when it prints its ``report``-th report line
        (with no ``sig``, just return then)."""
        return self.run_until(report, sig, "deploy", str(self.model))

    def run_until(self, report: int, sig: int | None, *args: str) -> subprocess.Popen:
        """Start an engine command and send ``sig`` when it prints its ``report``-th
        report line (with no ``sig``, just return then)."""
        engine = subprocess.Popen(self.command(*args), cwd=self.root,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen = 0
        assert engine.stdout is not None
        for line in engine.stdout:
            if line.startswith("["):
                seen += 1
                if seen == report:
                    if sig is not None:
                        engine.send_signal(sig)
                    break
        assert seen == report, f"{args[0]} ended after {seen} reports"
        return engine

    def agents(self) -> list[int]:
        """The agent processes of the servers (in their sandboxes)."""
        return [pid for server in self.servers()
                for pid in netns.pids(netns.server_namespace(server.name))
                if processes.is_agent(pid)]

    def wait_for_script(self, name: str, timeout: float = 60) -> None:
        """Wait until script ``name`` runs on every server (their agents start it once
        they are up, which a busy host makes slower): until it has logged its start
        (``LOG_LINE``) on each. A process whose command line names the script is not
        enough: the agent's wrapper names it while it waits for the agent's go-ahead,
        and a wrapper whose agent dies then never runs it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            steps, hosts = self.steps(), self.hosts()
            if hosts and all(steps[(host, name)] for host in hosts):
                return
            time.sleep(0.05)
        raise AssertionError(f"{name} did not run on every server within {timeout} s")

    def wait_for_sandboxes(self, timeout: float = 30) -> list[int]:
        """The processes in the servers' namespaces, once every server has one (a
        sandbox enters its namespace just after it is forked)."""
        deadline = time.monotonic() + timeout
        while True:
            found = {server.name: netns.pids(netns.server_namespace(server.name))
                     for server in self.servers()}
            if found and all(found.values()):
                return [pid for pids in found.values() for pid in pids]
            if time.monotonic() >= deadline:
                outputs = {name: _tail(self.cloud / "servers-records" / f"{name}.out")
                           for name, pids in found.items() if not pids}
                raise AssertionError(f"servers without a process after {timeout} s: "
                                     f"{outputs}")
            time.sleep(0.05)

    def hosts(self) -> list[str]:
        """The servers' host names."""
        return [json.loads((server / "server.json").read_text())["hostname"]
                for server in self.servers()]

    def outputs(self) -> dict:
        app = json.loads(self.state.read_text())["Objects"]["applications"][0]
        return {"masterNode": app["masterNode"], "port": app["masterAddress"].split(":")[1],
                "check": app["lastCheck"].split(" ", 1)[1], "servers": len(app["servers"])}

    def servers(self) -> list[Path]:
        """The servers' folders (beside them, hidden ones hold the sandboxes' roots)."""
        return [p for p in (self.cloud / "servers").iterdir() if not p.name.startswith(".")]

    def steps(self) -> collections.Counter:
        """How often each script ran on each server (by host name)."""
        counts: collections.Counter = collections.Counter()
        for server in self.servers():
            host = json.loads((server / "server.json").read_text())["hostname"]
            log = server / "steps.log"
            for line in log.read_text().split() if log.exists() else ():
                counts[(host, line)] += 1
        return counts

    def destroy_and_check(self) -> None:
        servers = [p.name for p in self.servers()]
        queues = {name for server in self.servers() for name in _agent_queues(
            server / "agent.conf")}
        networks = kv_nodes.network_ids(self.cloud, servers)
        inside = [pid for s in servers for pid in netns.pids(netns.server_namespace(s))]
        users = {_agent_login(server / "agent.conf") for server in self.servers()}
        assert users and all(u.startswith(USER_PREFIX) for u in users), users
        assert users <= set(_identities().users()), "each server has a broker user"
        self.run("destroy")
        assert not self.state.exists()
        assert not list((self.cloud / "servers").iterdir()), "a server's folder is left"
        assert not list((self.cloud / "stacks").iterdir()), "a stack is left"
        assert kv_nodes.namespaces_left(servers, networks) == []
        assert inside and kv_nodes.alive(inside) == [], "a sandbox's process outlived destroy"
        assert not _processes_mentioning(str(self.cloud)), "a process outlived destroy"
        assert queues and not [q for q in queues if _queue_exists(q)], "a queue is left"
        assert not users & set(_identities().users()), "a server's broker user is left"


def _agent_login(conf: Path) -> str:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(conf.read_text())
    return parser.get("rabbitmq", "login")


def _identities() -> BrokerIdentities:
    identities = BrokerIdentities.from_config(load_config(None, environ={}))
    assert identities is not None
    return identities


def _agent_queues(conf: Path) -> set[str]:
    """The queues a server's agent uses: its input queue and the results queue."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(conf.read_text())
    return {parser.get("rabbitmq", "input_queue"), parser.get("rabbitmq", "result_routing_key")}


def _processes_mentioning(text: str) -> list[int]:
    return [pid for pid, command in processes.command_lines() if text.encode() in command]


def _queue_exists(name: str) -> bool:
    with kombu.Connection(AMQP, connect_timeout=3) as conn:
        try:
            conn.default_channel.queue_declare(name, passive=True)
        except conn.channel_errors:
            return False
    return True


def _tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a file ("" when there is none)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _force_cleanup(site: Site) -> None:
    """After a failed assertion only: stop whatever the test's runs left."""
    if site.state.exists() or (site.root / "state.json.journal").exists():
        subprocess.run(site.command("destroy"), capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[dict, collections.Counter, int]:
    """An uninterrupted deploy: its outputs, its script runs and its number of reports."""
    site = Site(tmp_path_factory.mktemp("reference"))
    try:
        done = site.run("deploy", str(site.model))
        result = (site.outputs(), site.steps(),
                  sum(line.startswith("[") for line in done.stdout.splitlines()))
        site.destroy_and_check()
    finally:
        _force_cleanup(site)
    return result


def test_the_reference_run_runs_each_step_once(reference):
    outputs, steps, reports = reference
    assert outputs["servers"] == 2 and outputs["masterNode"] == "kv-1"
    assert steps[("kv-1", "configure.sh")] == 1 and steps[("kv-2", "start.sh")] == 1
    assert reports >= 8


def test_engine_killed_at_each_report_then_deployed_again(tmp_path, reference):
    outputs, steps, reports = reference

    def kill_at(report: int) -> None:
        site = Site(tmp_path / f"kill-{report}")
        try:
            killed = site.deploy_until(report, signal.SIGKILL)
            killed.wait(30)
            assert (site.root / "state.json.journal").exists()

            again = site.run("deploy", str(site.model))

            assert "resuming the run interrupted earlier" in again.stdout
            # What the resume announces is what comes from the journal.
            held = re.search(r"its journal holds (\d+) finished step", again.stdout)
            came = re.search(r"^(\d+) step\(s\) came from the journal", again.stdout, re.M)
            assert held, again.stdout
            assert int(held.group(1)) == (int(came.group(1)) if came else 0), again.stdout
            assert site.outputs() == outputs, f"killed at report {report}"
            assert site.steps() == steps, f"killed at report {report}: {again.stdout}"
            site.destroy_and_check()
        finally:
            _force_cleanup(site)

    # Three environments at a time (each in sandboxes of its own), every kill point.
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        for done in [pool.submit(kill_at, report) for report in range(1, reports + 1)]:
            done.result()


def test_destroy_after_a_kill_removes_what_the_killed_run_made(tmp_path, reference):
    site = Site(tmp_path)
    try:
        killed = site.deploy_until(3, signal.SIGKILL)  # the servers run; no state file yet
        killed.wait(30)
        assert not site.state.exists() and site.servers()
        assert site.wait_for_sandboxes()  # the killed engine's servers live on

        site.destroy_and_check()
    finally:
        _force_cleanup(site)


def test_a_destroy_killed_while_it_releases_servers_is_finished_by_the_next(tmp_path):
    """Killed while a server's release runs (in the background: the server's stack
    record is already gone; here as soon as its namespace is, before its folder and
    broker user go), the next destroy still removes every server: sandbox, namespace,
    disk, broker user."""
    site = Site(tmp_path)
    try:
        site.run("deploy", str(site.model))
        servers = [p.name for p in site.servers()]
        networks = kv_nodes.network_ids(site.cloud, servers)
        inside = [pid for s in servers for pid in netns.pids(netns.server_namespace(s))]
        users = {_agent_login(server / "agent.conf") for server in site.servers()}
        killed = subprocess.Popen(site.command("destroy"), cwd=site.root,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        first = netns.server_namespace(servers[0])
        deadline = time.monotonic() + 60
        while netns.exists(first) and killed.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        killed.kill()
        assert killed.wait(30) == -signal.SIGKILL, "the destroy ended before it was killed"

        site.run("destroy")
        assert not site.state.exists()
        assert not list((site.cloud / "servers").iterdir()), "a server's folder is left"
        assert not list((site.cloud / "servers-records").iterdir())
        assert kv_nodes.namespaces_left(servers, networks) == []
        assert inside and kv_nodes.alive(inside) == [], "a sandbox's process outlived destroy"
        assert not _processes_mentioning(str(site.cloud)), "a process outlived destroy"
        assert not users & set(_identities().users()), "a server's broker user is left"
        mounts = Path("/proc/self/mountinfo").read_text()
        assert str(site.cloud) not in mounts, "a server's disk is still mounted"
    finally:
        _force_cleanup(site)


def test_ctrl_c_stops_cleanly_and_deploy_resumes(tmp_path, reference):
    outputs, steps, _ = reference
    site = Site(tmp_path)
    try:
        engine = site.deploy_until(5, signal.SIGINT)
        started = time.monotonic()
        _, err = engine.communicate(timeout=30)
        stopped_in = time.monotonic() - started

        assert engine.returncode == 130, err
        assert stopped_in < 2.0, f"took {stopped_in:.1f} s to stop"
        assert "Traceback" not in err and "Run the same command to carry on" in err

        again = site.run("deploy", str(site.model))
        assert "resuming" in again.stdout
        assert site.outputs() == outputs and site.steps() == steps
        site.destroy_and_check()
    finally:
        _force_cleanup(site)


def test_a_second_ctrl_c_ends_the_process_at_once(tmp_path):
    site = Site(tmp_path)
    try:
        engine = site.deploy_until(2, signal.SIGINT)
        engine.send_signal(signal.SIGINT)
        engine.communicate(timeout=10)
        assert engine.returncode == 128 + signal.SIGINT
        assert (site.root / "state.json.journal").exists()  # intact, to resume or destroy
        site.destroy_and_check()
    finally:
        _force_cleanup(site)


def test_a_forged_result_for_a_plan_in_flight_is_refused(tmp_path):
    site = Site(tmp_path, slow="configure.sh")
    try:
        engine = site.deploy_until(4)  # configure.sh runs on both nodes now (for 1.5 s)
        time.sleep(0.5)
        engine.kill()
        engine.communicate(timeout=30)
        journal = site.root / "state.json.journal"
        lines = journal.read_bytes().splitlines(keepends=True)
        entries = [json.loads(line) for line in lines[1:]]
        ended = {e["k"] for e in entries if e["t"] == "end"}
        in_flight = [e for e in entries if e["t"] == "begin" and e["k"] not in ended]
        answered = [e["v"] for e in entries if e["t"] == "end" and "|agent." in e["k"]]
        assert in_flight and answered, "no plan was in flight, or none had been answered"
        # A made-up answer to the plan in flight, shaped as a real one, chained as well
        # as one can without the journal key.
        forged = {"k": in_flight[0]["k"], "t": "end", "v": answered[-1]}
        chain = Chain(None)
        chain.last = entries[-1]["d"]
        body = json.dumps(forged, separators=(",", ":")).encode()
        journal.write_bytes(b"".join(lines) + b'{"d":"' + chain.seal(body).encode() + b'",'
                            + body[1:] + b"\n")
        time.sleep(2.0)  # the plans in flight end in their servers
        steps = site.steps()

        again = subprocess.run(site.command("deploy", str(site.model)), capture_output=True,
                               text=True, timeout=300, cwd=site.root)

        assert again.returncode == 1
        assert again.stderr.startswith(f"error: {journal}:{len(lines) + 1}: {TAMPERED}. "
                                       "Nothing was run from it."), again.stderr
        assert site.steps() == steps and not site.state.exists()
        journal.write_bytes(b"".join(lines))  # as the killed run left it: destroy removes
        site.destroy_and_check()               # what it made
    finally:
        _force_cleanup(site)


def test_agents_killed_mid_plan_run_no_step_twice(tmp_path, reference):
    outputs, steps, _ = reference
    site = Site(tmp_path, slow="configure.sh")
    try:
        engine = site.deploy_until(4)  # "stage 2/6 (configure every node)"
        site.wait_for_script("configure.sh")  # on both nodes now (for 1.5 s)
        agents = site.agents()
        assert len(agents) == 2
        for pid in agents:
            os.kill(pid, signal.SIGKILL)  # each server's init starts its agent again

        out, err = engine.communicate(timeout=120)

        assert engine.returncode == 0, out + err
        assert not set(site.agents()) & set(agents)
        assert site.outputs() == outputs and site.steps() == steps
        site.destroy_and_check()
    finally:
        _force_cleanup(site)


def test_a_broker_cut_mid_deploy_loses_nothing(tmp_path, reference):
    outputs, steps, _ = reference
    forwarder = TcpForwarder(5672)
    site = Site(tmp_path, slow="configure.sh", broker_port=forwarder.port)
    try:
        engine = site.deploy_until(4)
        site.wait_for_script("configure.sh")  # on both nodes now (for 1.5 s)
        assert forwarder.cut() > 0  # the engine's and the agents' connections
        time.sleep(2.0)
        forwarder.restore()

        out, err = engine.communicate(timeout=120)

        assert engine.returncode == 0, out + err
        assert site.outputs() == outputs and site.steps() == steps
        site.destroy_and_check()
    finally:
        _force_cleanup(site)
        forwarder.close()
