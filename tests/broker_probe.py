"""What a hostile package would try with its server's broker credentials (issue 21).

:func:`write_package` makes ``t.rights``: an application with one Linux server
that, when given ``targets``, runs ``probe.py`` there. The probe reads the agent's
own config file (the one the agent was started with), connects with exactly the
credentials in it and tries, each on a channel (or connection) of its own:
publishing into another environment's agent queue and result exchange, reading
the task queue, that queue and the results queue, declaring, purging, deleting
and binding others' queues, opening the engine's virtual host, logging in as
``guest/guest`` (which the local cloud's broker relay must cut off). Its output (the
application's ``probe``) maps each attempt to the broker's reply code (0: done).
:func:`assert_only_its_own` checks them. :class:`Deployment` runs the engine
command on one environment.
"""

from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

from murano_engine.messaging import AgentClient
from murano_engine.messaging.identities import result_exchange_name

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
                config = sys.argv[sys.argv.index('--config-file') + 1]
                return probe(' '.join([sys.executable, args.targets, ':'.join(sys.path),
                                       config])).stdout
              Scripts:
                probe:
                  Type: Application
                  EntryPoint: probe.sh
                  Files: [probe.py]
          - $.probe: $.server.agent.call($template, new(sys:Resources))
"""

#: Runs on the server (arguments: the targets, the agent's sys.path, its config file):
#: each attempt on a channel (or connection) of its own; prints one JSON object,
#: attempt name -> the broker's reply code (0: allowed).
PROBE = r'''
import configparser, json, sys
from urllib.parse import unquote, urlsplit
sys.path[:0] = sys.argv[6].split(":")  # the agent's Python has an AMQP client
import amqp

conf = configparser.ConfigParser(interpolation=None)
conf.read(sys.argv[7])  # the agent's own config file
url = urlsplit(conf.get("rabbitmq", "url"))
own = conf.get("rabbitmq", "input_queue")
login, password = unquote(url.username), unquote(url.password)
vhost = unquote(url.path[1:]) or "/"
other_queue, other_exchange, results, tasks, other_vhost = sys.argv[1:6]

def attempt(action, virtual_host=vhost, userid=login, secret=password, method=None):
    conn = amqp.Connection(f"{url.hostname}:{url.port or 5672}", userid=userid, password=secret,
                           virtual_host=virtual_host, login_method=method, connect_timeout=5)
    try:
        conn.connect()
        channel = conn.channel()
        action(channel)
        channel.basic_qos(0, 1, False)  # a round trip: a refused publish shows by now
        return 0
    except amqp.exceptions.AMQPError as exc:
        return exc.reply_code
    except OSError:  # the connection was cut before the broker answered the login
        return -1
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
    "own queue passively, PLAIN login": attempt(
        lambda ch: ch.queue_declare(own, passive=True), method="PLAIN"),
    "log in as guest/guest": attempt(lambda ch: None, "/", "guest", "guest", "PLAIN"),
    "log in as guest/guest, AMQPLAIN": attempt(lambda ch: None, "/", "guest", "guest",
                                               "AMQPLAIN"),
}
print(json.dumps(outcome))
'''

REFUSED = 403  # ACCESS_REFUSED: no permission on the resource
NOT_ALLOWED = 530  # no access to the virtual host
CUT = -1  # the connection was closed before the broker answered the login


def assert_only_its_own(outcome: dict[str, int], *, relayed: bool = True) -> None:
    """Only the probe's own queue was within reach; everything else refused. When
    ``relayed`` (a local-cloud sandbox), logging in as anyone else is cut off by the
    relay; otherwise (a server on a real network) that is the broker's business."""
    outcome = dict(outcome)
    assert outcome.pop("own queue passively") == 0
    assert outcome.pop("own queue passively, PLAIN login") == 0
    assert outcome.pop("open engine virtual host") == NOT_ALLOWED
    guest_logins = (outcome.pop("log in as guest/guest"),
                    outcome.pop("log in as guest/guest, AMQPLAIN"))
    if relayed:
        assert guest_logins == (CUT, CUT)
    assert outcome == dict.fromkeys(outcome, REFUSED)


def targets(other: Deployment, results_queue: str, engine_vhost: str) -> str:
    """What the probe tries to reach: ``other``'s queue, its results queue
    (``results_queue``) and the exchange bound to that, the task queue, the engine's
    virtual host."""
    return " ".join([other.queue, result_exchange_name(results_queue), results_queue,
                     "murano-tasks", engine_vhost])


def write_package(root: Path) -> None:
    """The ``t.rights`` package in ``root``."""
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


def model(environment_id: str, targets: str | None) -> dict:
    return {"?": {"id": environment_id, "type": "io.murano.Environment"},
            "name": f"rights-{environment_id[:6]}",
            "defaultNetworks": {"environment": None, "flat": None},
            "applications": [{"?": {"id": uuid.uuid4().hex, "type": "t.rights.Node"},
                              "targets": targets}]}


class Deployment:
    """One environment deployed by the engine command, with a state file of its own."""

    def __init__(self, tmp: Path, name: str) -> None:
        """Packages in ``tmp/packages``, the engine config ``tmp/engine.ini``."""
        self.tmp, self.name = tmp, name
        self.id = uuid.uuid4().hex

    def run(self, *args: str) -> subprocess.CompletedProcess:
        repo = str(Path(__file__).resolve().parents[1])
        return subprocess.run(
            [sys.executable, "-m", "murano_engine.cli.main", *args,
             "-l", str(self.tmp / "packages"),
             "--state", str(self.tmp / f"{self.name}.state"),
             "--config", str(self.tmp / "engine.ini")],
            capture_output=True, text=True, timeout=600, cwd=self.tmp,
            env={**os.environ, "PYTHONPATH": repo})

    def deploy(self, targets: str | None = None) -> dict:
        """Deploy; with ``targets``, the server runs the probe against them. The
        application's output properties."""
        (self.tmp / f"{self.name}.json").write_text(json.dumps(model(self.id, targets)))
        done = self.run("deploy", str(self.tmp / f"{self.name}.json"))
        assert done.returncode == 0, done.stdout + done.stderr
        state = json.loads((self.tmp / f"{self.name}.state").read_text())
        return state["Objects"]["applications"][0]

    def results_queue(self, servers: Path, timeout: float = 60.0) -> str:
        """The results queue this environment's agents publish to, from the agent
        config of its server among ``servers`` (folders holding ``agent.conf``). A
        deploy that ran no plan can end before the server's folder is written (a
        stand-in agent starts once Heat lists the server): waits up to ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            for conf in servers.glob("*/agent.conf"):
                parser = configparser.ConfigParser(interpolation=None)
                try:
                    parser.read_string(conf.read_text())
                except configparser.Error:
                    continue  # being written
                if parser.get("rabbitmq", "input_queue", fallback="") == self.queue:
                    return parser.get("rabbitmq", "result_routing_key")
            if time.monotonic() > deadline:
                raise AssertionError(f"no server of environment {self.id} in {servers} "
                                     f"after {timeout} s")
            time.sleep(0.2)

    @property
    def queue(self) -> str:
        state = json.loads((self.tmp / f"{self.name}.state").read_text())
        server = state["Objects"]["applications"][0]["server"]
        return AgentClient.queue_name(self.id, server["?"]["id"])

    def destroy(self) -> None:
        if (self.tmp / f"{self.name}.state").exists():
            done = self.run("destroy")
            assert done.returncode == 0, done.stdout + done.stderr
