"""A server's broker identity, tried from inside its sandbox (issue 21, item 1).

Two environments are deployed with the engine command on the local cloud; a plan
sent to environment A's server runs ``probe.py`` there, which connects through the
sandbox's broker relay with exactly the credentials in its agent config and tries
what a hostile package would: publish into B's agent queue and B's result
exchange, read the task queue, B's queue and the results queue, declare, purge
and delete others' queues, open another virtual host. Every one must be refused
with ACCESS_REFUSED (403), or NOT_ALLOWED (530) for the engine's virtual host (where
tasks, results and reports go), while the plan's own result still comes back.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import kombu
import pytest

from murano_engine.clouds.local.sandbox import missing_for_namespaces
from murano_engine.config import load_config
from murano_engine.messaging import AgentClient
from murano_engine.messaging.identities import (
    BrokerIdentities,
    identity_name,
    result_exchange_name,
)
from murano_engine.messaging.transport import prepare_transport

AMQP = "amqp://guest:guest@127.0.0.1:5672//"
CONFIG = load_config(None, environ={})

pytestmark = pytest.mark.skipif(bool(missing_for_namespaces()),
                                reason=f"no namespaces here: {missing_for_namespaces()}")

APP = """
Namespaces:
  =: t.rights
  std: io.murano
  res: io.murano.resources
  sys: io.murano.system
Name: Node
Extends: std:Application
Properties:
  server:
    Contract: $.class(res:LinuxMuranoInstance)
    Usage: Out
  targets:
    Contract: $.string()
  probe:
    Contract: $.string()
    Usage: Out
Methods:
  deploy:
    Body:
      - If: $.server = null
        Then:
          - $.server: new(res:LinuxMuranoInstance, $this, name => node,
              image => 'debian-12', flavor => 'm1.small')
      - $.server.deploy()
      - If: $.targets != null
        Then:
          - $template:
              FormatVersion: '2.1.0'
              Parameters:
                targets: $.targets
              Body: |
                import sys
                return probe(' '.join([sys.executable, args.targets, ':'.join(sys.path)])).stdout
              Scripts:
                probe:
                  Type: Application
                  EntryPoint: probe.sh
                  Files: [probe.py]
          - $.probe: $.server.agent.call($template, new(sys:Resources))
"""

#: Runs inside the sandbox: each attempt on a channel (or connection) of its own;
#: prints one JSON object, attempt name -> the broker's reply code (0: allowed).
PROBE = r'''
import configparser, json, sys
from urllib.parse import unquote, urlsplit
sys.path[:0] = sys.argv[6].split(":")  # the agent's Python has an AMQP client
import amqp

conf = configparser.ConfigParser(interpolation=None)
conf.read("/sandbox/agent.effective.conf")
url = urlsplit(conf.get("rabbitmq", "url"))
own = conf.get("rabbitmq", "input_queue")
login, password = unquote(url.username), unquote(url.password)
vhost = unquote(url.path[1:]) or "/"
other_queue, other_exchange, results, tasks, other_vhost = sys.argv[1:6]

def attempt(action, virtual_host=vhost):
    conn = amqp.Connection("127.0.0.1:5672", userid=login, password=password,
                           virtual_host=virtual_host, connect_timeout=5)
    try:
        conn.connect()
        channel = conn.channel()
        action(channel)
        channel.basic_qos(0, 1, False)  # a round trip: a refused publish shows by now
        return 0
    except amqp.exceptions.AMQPError as exc:
        return exc.reply_code
    finally:
        try:
            conn.close()
        except Exception:
            pass

def publish(exchange, key):
    return lambda ch: ch.basic_publish(amqp.Message('{"forged": 1}'), exchange, key)

outcome = {
    "publish to other agent queue": attempt(publish("", other_queue)),
    "publish to other result exchange": attempt(publish(other_exchange, results)),
    "publish to amq.direct": attempt(publish("amq.direct", other_queue)),
    "get task queue": attempt(lambda ch: ch.basic_get(tasks)),
    "get other agent queue": attempt(lambda ch: ch.basic_get(other_queue)),
    "consume other agent queue": attempt(lambda ch: ch.basic_consume(other_queue)),
    "get results queue": attempt(lambda ch: ch.basic_get(results)),
    "declare other agent queue": attempt(lambda ch: ch.queue_declare(
        other_queue, durable=True, auto_delete=False,
        arguments={"x-ha-policy": "all", "x-expires": 86400000})),
    "declare a new queue": attempt(lambda ch: ch.queue_declare("stolen-" + own)),
    "purge other agent queue": attempt(lambda ch: ch.queue_purge(other_queue)),
    "delete other agent queue": attempt(lambda ch: ch.queue_delete(other_queue)),
    "delete results queue": attempt(lambda ch: ch.queue_delete(results)),
    "bind results queue": attempt(lambda ch: ch.queue_bind(results, "amq.direct", "x")),
    "open engine virtual host": attempt(lambda ch: None, other_vhost),
    "own queue passively": attempt(lambda ch: ch.queue_declare(own, passive=True)),
}
print(json.dumps(outcome))
'''

REFUSED = 403  # ACCESS_REFUSED: no permission on the resource
NOT_ALLOWED = 530  # no access to the virtual host


def _package(root: Path) -> None:
    package = root / "t.rights"
    (package / "Classes").mkdir(parents=True)
    (package / "manifest.yaml").write_text(
        "Format: 1.4\nType: Application\nFullName: t.rights\n"
        "Classes:\n  t.rights.Node: Node.yaml\n")
    (package / "Classes" / "Node.yaml").write_text(textwrap.dedent(APP))
    scripts = package / "Resources" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "probe.sh").write_text('#!/bin/sh\npython=$1; shift\nexec "$python" probe.py "$@"\n')
    (scripts / "probe.py").write_text(PROBE)


def _model(environment_id: str, targets: str | None) -> dict:
    return {"?": {"id": environment_id, "type": "io.murano.Environment"},
            "name": f"rights-{environment_id[:6]}",
            "defaultNetworks": {"environment": None, "flat": None},
            "applications": [{"?": {"id": uuid.uuid4().hex, "type": "t.rights.Node"},
                              "targets": targets}]}


class Deployment:
    """One environment deployed by the engine command, with a state file of its own."""

    def __init__(self, tmp: Path, name: str) -> None:
        self.tmp, self.name = tmp, name
        self.id = uuid.uuid4().hex

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "murano_engine.cli", *args, "-l", str(self.tmp / "packages"),
             "--state", str(self.tmp / f"{self.name}.state"),
             "--config", str(self.tmp / "engine.ini")],
            capture_output=True, text=True, timeout=300, cwd=self.tmp)

    def deploy(self, targets: str | None = None) -> dict:
        """Deploy; with ``targets``, the server runs the probe against them. The
        application's output properties."""
        (self.tmp / f"{self.name}.json").write_text(json.dumps(_model(self.id, targets)))
        done = self.run("deploy", str(self.tmp / f"{self.name}.json"))
        assert done.returncode == 0, done.stdout + done.stderr
        state = json.loads((self.tmp / f"{self.name}.state").read_text())
        return state["Objects"]["applications"][0]

    @property
    def queue(self) -> str:
        state = json.loads((self.tmp / f"{self.name}.state").read_text())
        server = state["Objects"]["applications"][0]["server"]
        return AgentClient.queue_name(self.id, server["?"]["id"])

    def destroy(self) -> None:
        if (self.tmp / f"{self.name}.state").exists():
            done = self.run("destroy")
            assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture
def deployments(tmp_path):
    _package(tmp_path / "packages")
    region = f"rights-{uuid.uuid4().hex[:8]}"
    (tmp_path / "engine.ini").write_text(
        f"[engine]\nhome_region = {region}\n"
        f"[local_cloud]\nstate_dir = {tmp_path / 'cloud'}\npoll_interval = 0.01\n")
    made = [Deployment(tmp_path, "a"), Deployment(tmp_path, "b")]
    engine_vhost = f"murano-engine-test-{uuid.uuid4().hex[:8]}"  # where tasks would go
    prepare_transport(f"amqp://guest:guest@127.0.0.1:5672/{engine_vhost}", CONFIG)
    yield region, engine_vhost, made
    for deployment in made:
        deployment.destroy()
    with kombu.Connection(AMQP) as conn:
        conn.default_channel.queue_delete(AgentClient(AMQP, region).result_queue)
    _identities().api.request("DELETE", f"/api/vhosts/{engine_vhost}")


def _identities() -> BrokerIdentities:
    identities = BrokerIdentities.from_config(CONFIG)
    assert identities is not None
    return identities


def test_a_sandbox_can_reach_its_own_queue_and_results_and_nothing_else(deployments):
    region, engine_vhost, (a, b) = deployments
    identities = _identities()

    def users() -> set[str]:  # the broker users of these two environments' servers
        return {u for u in identities.users()
                if u.startswith((identity_name(f"e{a.id}-"), identity_name(f"e{b.id}-")))}

    b.deploy()
    targets = [b.queue, result_exchange_name(b.id), AgentClient(AMQP, region).result_queue,
               "murano-tasks", engine_vhost]
    outcome = json.loads(a.deploy(" ".join(targets))["probe"])
    assert users() == {identity_name(a.queue), identity_name(b.queue)}

    assert outcome.pop("own queue passively") == 0
    assert outcome.pop("open engine virtual host") == NOT_ALLOWED
    assert outcome == dict.fromkeys(outcome, REFUSED)

    # Removing the servers removes their users.
    a.destroy()
    b.destroy()
    assert users() == set()
