"""``murano-engine deploy --config`` against real Keystone and heat-engine (``[heat] no_compute``).

The servers are stand-in provider stacks (murano_engine/clouds/heat_providers);
murano-agents that the test runs (tests/openstack/agents.py) take their VMs'
place on RabbitMQ. Heat does the rest for real: the stack's lifecycle,
dependency order, ``get_attr`` and outputs, updates, deletes, failures.
"""

from __future__ import annotations

import configparser
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from heatclient import exc as heat_exc

from murano_engine.engine.config import load_config
from murano_engine.messaging.identities import BrokerIdentities
from tests.apps import kv_nodes
from tests.openstack.agents import StandInAgents
from tests.openstack.conftest import AMQP, engine_ini

REPO = Path(__file__).resolve().parents[2]
PARITY = REPO / "tests" / "system" / "parity"
FAILING = """\
Namespaces:
  =: test.openstack
  std: io.murano
Name: FailingResource
Extends: std:Application
Properties:
  message:
    Contract: $.string().notNull()
Methods:
  deploy:
    Body:
      - $stack: $.find(std:Environment).require().stack
      - $stack.updateTemplate(dict(resources => dict(doomed => dict(
          type => 'OS::Heat::TestResource', properties => dict(fail => true,
          value => $.message)))))
      - $stack.push()
"""


def _engine(tmp: Path, packages: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "murano_engine.cli.main", *args, "-l", str(packages),
         "--state", str(tmp / "state.json"), "--config", str(tmp / "engine.ini")],
        capture_output=True, text=True, timeout=600, cwd=tmp,
        env={**os.environ, "PYTHONPATH": str(REPO)})


def _identities() -> BrokerIdentities:
    identities = BrokerIdentities.from_config(load_config(None, environ={}))
    assert identities is not None
    return identities


def _broker_users(servers: Path) -> dict[str, str]:
    """Server (nested stack id) -> the broker login its user data gave its agent."""
    found = {}
    for conf in servers.glob("*/agent.conf"):
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(conf.read_text())
        found[conf.parent.name] = unquote(urlsplit(parser.get("rabbitmq", "url")).username)
    return found


def _stack(heat, prefix: str) -> Any:
    found = [s for s in heat.stacks.list() if s.stack_name.startswith(prefix)]
    assert len(found) == 1, [s.stack_name for s in found]
    return heat.stacks.get(found[0].id)


def _resources(heat, stack) -> dict[str, tuple[str, str]]:
    """The stack's own resources: name -> (type, physical id)."""
    return {r.resource_name: (r.resource_type, r.physical_resource_id)
            for r in heat.resources.list(stack.id)}


def _outputs(heat, stack_id: str) -> dict[str, Any]:
    return {o["output_key"]: o.get("output_value")
            for o in heat.stacks.get(stack_id).outputs or []}


def _gone(heat, stack_id: str) -> bool:
    try:
        return heat.stacks.get(stack_id).stack_status == "DELETE_COMPLETE"
    except heat_exc.HTTPNotFound:
        return True


def _until(check, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _free_base_port(count: int) -> int:
    for base in range(29700, 30700, 10):
        sockets = []
        try:
            for port in range(base, base + count):
                sockets.append(socket.socket())
                sockets[-1].bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
        return base
    pytest.skip("no free loopback ports for the key-value nodes")


def test_linux_cluster_deploy_scale_in_destroy(openstack, demo_heat, tmp_path: Path):
    engine_ini(openstack, openstack.accounts["demo"], tmp_path)
    base = _free_base_port(2)
    model = json.loads((REPO / "examples" / "linux-cluster.json").read_text())
    model["applications"][0].update(nodeCount=2, basePort=base)
    (tmp_path / "two.json").write_text(json.dumps(model))
    model["applications"][0]["nodeCount"] = 1
    (tmp_path / "one.json").write_text(json.dumps(model))
    marker = str(tmp_path / "servers")
    try:
        with StandInAgents(demo_heat, tmp_path / "servers", AMQP) as agents:
            done = _engine(tmp_path, REPO / "dsl_packages", "deploy", str(tmp_path / "two.json"))
            assert done.returncode == 0, done.stdout + done.stderr
            assert "read back from 1 replica(s)" in done.stdout
            app = json.loads((tmp_path / "state.json").read_text())["Objects"]["applications"][0]
            master, replica = kv_nodes.nodes(app, sandboxed=False)
            assert replica.status()["master"] == master.address
            assert master.request("/kv/k", "PUT", "v")[0] == 200 and replica.serves("k", "v")

            stack = _stack(demo_heat, "murano-linux-cluster-")
            assert stack.stack_status in ("CREATE_COMPLETE", "UPDATE_COMPLETE")
            assert "murano" in (stack.tags or [])
            before = _resources(demo_heat, stack)
            servers = {n: pid for n, (kind, pid) in before.items() if kind == "OS::Nova::Server"}
            assert servers == {"kv-1": master.server_id, "kv-2": replica.server_id}
            # the model's addresses are the ones Heat's get_attr answered for the servers
            for node in (master, replica):
                server = _outputs(demo_heat, node.server_id)
                assert server["first_address"] == node.ip
                assert list(server["networks"].values()) == [[node.ip]]
            assert agents.running() == {"kv-1": master.server_id, "kv-2": replica.server_id}, \
                agents.errors
            assert len(kv_nodes.kv_processes(marker)) == 2
            users = _broker_users(tmp_path / "servers")  # each server's, from its user data
            assert len(users) == 2 and set(users.values()) <= set(_identities().users())

            done = _engine(tmp_path, REPO / "dsl_packages", "deploy", str(tmp_path / "one.json"))
            assert done.returncode == 0, done.stdout + done.stderr
            stack = _stack(demo_heat, "murano-linux-cluster-")
            assert stack.stack_status == "UPDATE_COMPLETE"
            after = _resources(demo_heat, stack)
            removed = set(before) - set(after)
            assert removed == {n for n in before if n.endswith("kv-2")}, removed
            assert {"kv-2", next(n for n in removed if n.startswith("port-"))} <= removed
            assert set(after) <= set(before)
            assert all(after[n][1] == before[n][1] for n in after), "a kept resource was replaced"
            assert _until(lambda: agents.running() == {"kv-1": master.server_id}), agents.errors
            assert _until(lambda: len(kv_nodes.kv_processes(marker)) == 1)
            assert master.status()["role"] == "master"
            left = set(_identities().users()) & set(users.values())
            assert left == {users[master.server_id]}, "the removed server's user must go"

            done = _engine(tmp_path, REPO / "dsl_packages", "destroy")
            assert done.returncode == 0, done.stdout + done.stderr
            assert _gone(demo_heat, stack.id)
            assert not [s for s in demo_heat.stacks.list() if s.id == stack.id]
            assert _until(lambda: agents.running() == {}), agents.errors
            assert _until(lambda: kv_nodes.kv_processes(marker) == [])
            assert not (tmp_path / "state.json").exists()
            assert not set(_identities().users()) & set(users.values())
    finally:
        for pid in kv_nodes.kv_processes(marker):
            os.kill(pid, signal.SIGKILL)


def test_incubator_style_apps(openstack, demo_heat, tmp_path: Path):
    """Format 1.0 applications on LinuxMuranoInstances, as the incubator's are: a
    security rule in the environment's group, one agent plan each."""
    engine_ini(openstack, openstack.accounts["demo"], tmp_path)
    (tmp_path / "model.json").write_text((PARITY / "model.json").read_text())
    with StandInAgents(demo_heat, tmp_path / "servers", AMQP) as agents:
        done = _engine(tmp_path, PARITY, "deploy", str(tmp_path / "model.json"))
        assert done.returncode == 0, done.stdout + done.stderr
        apps = json.loads((tmp_path / "state.json").read_text())["Objects"]["applications"]
        assert apps[0]["installed"] == "telnet for parity-telnet installed"
        stack = _stack(demo_heat, "murano-parity-")
        resources = _resources(demo_heat, stack)
        assert sorted(n for n, (kind, _) in resources.items() if kind == "OS::Nova::Server") \
            == ["motd-vm", "telnet-vm"]
        assert set(agents.running()) == {"motd-vm", "telnet-vm"}, agents.errors
        template = demo_heat.stacks.template(stack.id)
        groups = [r for r in template["resources"].values()
                  if r["type"] == "OS::Neutron::SecurityGroup"]
        assert len(groups) == 1
        assert {"protocol": "tcp", "port_range_min": 23, "port_range_max": 23,
                "remote_ip_prefix": "0.0.0.0/0"}.items() <= next(
            rule for rule in groups[0]["properties"]["rules"]
            if rule.get("port_range_min") == 23).items()
        done = _engine(tmp_path, PARITY, "destroy")
        assert done.returncode == 0, done.stdout + done.stderr
        assert _gone(demo_heat, stack.id)


def test_a_failing_resource_fails_the_deployment_with_heats_reason(openstack, demo_heat,
                                                                    tmp_path: Path):
    package = tmp_path / "packages" / "test.openstack.FailingResource"
    (package / "Classes").mkdir(parents=True)
    (package / "manifest.yaml").write_text(
        "Format: 1.0\nType: Application\nFullName: test.openstack.FailingResource\n"
        "Name: Failing resource\nClasses:\n  test.openstack.FailingResource: Failing.yaml\n")
    (package / "Classes" / "Failing.yaml").write_text(FAILING)
    model = {"?": {"id": "f0000000000000000000000000000001", "type": "io.murano.Environment"},
             "name": "failing", "applications": [
                 {"?": {"id": "f0000000000000000000000000000002",
                        "type": "test.openstack.FailingResource"}, "message": "boom"}]}
    (tmp_path / "model.json").write_text(json.dumps(model))
    engine_ini(openstack, openstack.accounts["demo"], tmp_path)
    done = _engine(tmp_path, tmp_path / "packages", "deploy", str(tmp_path / "model.json"))
    assert done.returncode == 1, done.stdout + done.stderr
    stack = _stack(demo_heat, "murano-failing-")
    assert stack.stack_status == "CREATE_FAILED"
    reason = stack.stack_status_reason
    assert "Test Resource failed" in reason
    # the deployment's error report carries Heat's words; the MuranoPL stack shows the push
    assert f"error   f0000000 Stack {stack.stack_name} is CREATE_FAILED: {reason}" \
        in done.stdout, done.stdout
    assert "io.murano.system.HeatStack.push" in done.stderr
    assert "(murano_engine.clouds.base.StackFailed)" in done.stderr
    done = _engine(tmp_path, tmp_path / "packages", "destroy")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _gone(demo_heat, stack.id)
