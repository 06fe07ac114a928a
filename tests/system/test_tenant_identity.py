"""A model is tenant input: the environment an Agent reaches, the queues it names and the
broker identities it mints or revokes are the engine's environment's, never ids the
model carries.

Environment B has a real agent with a broker user of its own and B's signing key.
Environment A's model holds an object of A's own class extending io.murano.Environment
whose id is B's, owning an object whose id is B's instance's, and A's code tries
``send``, ``call``, ``brokerIdentity``, ``releaseBrokerIdentity`` on it and
``brokerIdentity(<B's result queue>)`` on an agent of its own: every attempt is refused
naming why, nothing runs on B's server, and B's broker user, password and queue stay.
"""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kombu
import pytest

from murano_agent.config import load_config as load_agent_config
from murano_agent.service import AgentService
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.config import load_config
from murano_engine.engine.interpreter import build_interpreter
from murano_engine.engine.tasks import run_task
from murano_engine.messaging import AgentClient
from murano_engine.messaging.identities import BrokerIdentities, identity_name
from murano_engine.messaging.management import ManagementApi, management_url, name
from murano_engine.messaging.signing import KeyRing

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "agent"))
from agent_harness import AMQP_URL, delete_queues, require_broker  # noqa: E402

PLAN = """\
      - $template:
          FormatVersion: '2.1.0'
          Name: mark
          Body: return run().stdout
          Scripts:
            run:
              Type: Application
              EntryPoint: mark.sh
"""

VICTIM = """\
Namespaces:
  =: test.tenant
  std: io.murano
  sys: io.murano.system

Name: Victim

Properties:
  env:
    Contract: $.class(std:Environment)
    Usage: Runtime
  agent:
    Contract: $.class(sys:Agent)
    Usage: Runtime

Methods:
  makeEnvironment:
    Body:
      - $.env: new(std:Environment, name => 'victim')
      - Return: id($.env)

  setUp:
    Body:
      - $host: new(Host, $.env)
      - $.agent: new(sys:Agent, host => $host)
      - $results: $.env.agentListener.queueName()
      - Return: [id($host), $.agent.queueName(), $results,
                 $.agent.brokerIdentity($results), $.agent.signingKey('\\t')]

  mark:
    Body:
""" + PLAN + """\
      - Return: $.agent.call($template, new(sys:Resources))
"""

ATTACKER = """\
Namespaces:
  =: test.tenant
  std: io.murano
  sys: io.murano.system

Name: Attacker

Extends: std:Environment

Properties:
  fake:
    Contract: $.class(FakeEnvironment)
  victimResults:
    Contract: $.string()

Methods:
  attempts:
    Body:
""" + PLAN + """\
      - $refusals: []
      - Try:
          - new(sys:Agent, host => $.fake.host).send($template, new(sys:Resources))
        Catch:
          - With: 'murano.common.exceptions.PolicyViolationException'
            As: e
            Do:
              - $refusals: $refusals + [['send', $e.message]]
      - Try:
          - new(sys:Agent, host => $.fake.host).call($template, new(sys:Resources), 5)
        Catch:
          - With: 'murano.common.exceptions.PolicyViolationException'
            As: e
            Do:
              - $refusals: $refusals + [['call', $e.message]]
      - Try:
          - new(sys:Agent, host => $.fake.host).brokerIdentity($.victimResults)
        Catch:
          - With: 'murano.common.exceptions.PolicyViolationException'
            As: e
            Do:
              - $refusals: $refusals + [['brokerIdentity', $e.message]]
      - Try:
          - new(sys:Agent, host => $.fake.host).releaseBrokerIdentity()
        Catch:
          - With: 'murano.common.exceptions.PolicyViolationException'
            As: e
            Do:
              - $refusals: $refusals + [['releaseBrokerIdentity', $e.message]]
      - $own: new(sys:Agent, host => new(Host, $this))
      - Try:
          - $own.brokerIdentity($.victimResults)
        Catch:
          - With: 'murano.common.exceptions.PolicyViolationException'
            As: e
            Do:
              - $refusals: $refusals + [['own brokerIdentity', $e.message]]
      - Return: [$refusals, $own.queueName(), $.agentListener.queueName()]

  deploy:
    Usage: Action
    Body:
""" + PLAN + """\
      - new(sys:Agent, host => $.fake.host).call($template, new(sys:Resources), 5)
"""

FAKE = """\
Namespaces:
  =: test.tenant
  std: io.murano

Name: FakeEnvironment

Extends: std:Environment

Properties:
  host:
    Contract: $.class(Host)
"""

HOST = """\
Namespaces:
  =: test.tenant
  std: io.murano

Name: Host

Extends: std:CloudResource
"""


@pytest.fixture(scope="module")
def marker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("marks") / "ran"


@pytest.fixture(scope="module")
def loader(tmp_path_factory: pytest.TempPathFactory, marker: Path) -> PackageLoader:
    root = tmp_path_factory.mktemp("packages") / "test.tenant"
    (root / "Classes").mkdir(parents=True)
    (root / "Resources" / "scripts").mkdir(parents=True)
    classes = {"Victim": VICTIM, "Attacker": ATTACKER, "FakeEnvironment": FAKE, "Host": HOST}
    for class_name, text in classes.items():
        (root / "Classes" / f"{class_name}.yaml").write_text(text)
    (root / "Resources" / "scripts" / "mark.sh").write_text(
        f"#!/bin/sh\necho ran >> {marker}\necho marked\n")
    (root / "manifest.yaml").write_text(textwrap.dedent("""\
        Format: 1.4
        Type: Application
        FullName: test.tenant
        Classes:
        """) + "".join(f"  test.tenant.{n}: {n}.yaml\n" for n in classes))
    return PackageLoader([root.parent], build_interpreter())


class Victim:
    """Environment B: a real agent with B's broker user and B's key, serving B's host."""

    def __init__(self, loader: PackageLoader, keys: KeyRing, identities: BrokerIdentities,
                 folder: Path) -> None:
        self.config = load_config(None, environ={})
        self.config["engine"].update(agent_timeout=20)
        self.agents = AgentClient(AMQP_URL, keys=keys)
        self.services: dict[str, Any] = {"agents": self.agents, "config": self.config,
                                         "identities": identities}
        self.executor = Executor(loader, services=self.services)
        self.driver = self.executor.new_object(loader.find_class("test.tenant.Victim"))
        # the engine's record of B: the id its environment object was made with
        self.env_id = self.call("makeEnvironment")
        self.services["environment_id"] = self.env_id
        self.host_id, self.queue, self.results, identity, key = self.call("setUp")
        self.identity = dict(identity)
        self.url = (f"amqp://{self.identity['login']}:{self.identity['password']}"
                    "@127.0.0.1:5672//")
        cfg = load_agent_config(
            "[DEFAULT]\nplan_timeout = 20\nengine_key = " + key + "\n",
            {"storage": folder / "agent", "rabbitmq.url": self.url,
             "rabbitmq.input_queue": self.queue,
             "rabbitmq.result_exchange": self.identity["result_exchange"],
             "rabbitmq.result_routing_key": self.results})
        self.service = AgentService(cfg)
        self.service.start()

    def call(self, method: str, *args: Any) -> Any:
        return self.executor.call(self.driver, method, list(args))

    def close(self) -> None:
        self.service.stop()
        self.agents.close()


@pytest.fixture
def management() -> ManagementApi:
    require_broker()
    config = load_config(None, environ={})
    return ManagementApi(management_url(config) or "")


@pytest.fixture
def victim(loader: PackageLoader, tmp_path: Path,
           management: ManagementApi) -> Iterator[Victim]:
    keys = KeyRing(tmp_path / "keys")
    identities = BrokerIdentities(management)
    made = Victim(loader, keys, identities, tmp_path)
    yield made
    made.close()
    identities.revoke(made.queue)
    identities.remove_exchange(made.results)
    delete_queues([made.results])


def _attacker_model(attacker_id: str, victim: Victim) -> dict[str, Any]:
    return {"Objects": {
        "?": {"id": attacker_id, "type": "test.tenant.Attacker"},
        "name": "attacker", "victimResults": victim.results,
        "fake": {"?": {"id": victim.env_id, "type": "test.tenant.FakeEnvironment"},
                 "name": "b",
                 "host": {"?": {"id": victim.host_id, "type": "test.tenant.Host"}}}},
        "Attributes": []}


def _broker_login_works(url: str) -> bool:
    conn = kombu.Connection(url, connect_timeout=5)
    try:
        conn.connect()
        return True
    except Exception:  # noqa: BLE001 - any refusal means the login no longer works
        return False
    finally:
        conn.release()


def test_another_environments_ids_in_a_model_reach_nothing_of_it(
        victim: Victim, loader: PackageLoader, marker: Path, tmp_path: Path,
        management: ManagementApi):
    assert victim.call("mark") == "marked"  # B's agent runs B's plans
    assert marker.read_text() == "ran\n"
    user = f"/api/users/{name(identity_name(victim.queue))}"
    before = management.request("GET", user)

    attacker_id = uuid.uuid4().hex
    keys = KeyRing(tmp_path / "keys")  # even the same key folder: B's key is not A's
    agents = AgentClient(AMQP_URL, keys=keys)
    identities = BrokerIdentities(management)
    services = {"agents": agents, "config": victim.config, "identities": identities}
    try:
        from murano_engine.dsl import model
        executor = Executor(loader, services={**services, "environment_id": attacker_id})
        root = model.load_model(executor, _attacker_model(attacker_id, victim))
        refusals, own_queue, own_results = executor.call(root, "attempts", [])
        refused = dict(refusals)
        assert sorted(refused) == ["brokerIdentity", "call", "own brokerIdentity",
                                   "releaseBrokerIdentity", "send"]
        for what in ("send", "call", "brokerIdentity", "releaseBrokerIdentity"):
            assert f"belongs to environment {victim.env_id}" in refused[what], refused[what]
            assert f"not to {attacker_id}" in refused[what]
        assert repr(victim.results) in refused["own brokerIdentity"]
        assert own_queue.startswith(f"e{attacker_id}-h")
        assert own_results.startswith(f"-execution-results-e{attacker_id}-")

        # the same through a whole task: the deployment fails naming the refusal
        result = run_task({"id": attacker_id, "action": {"object_id": attacker_id,
                                                         "method": "deploy", "args": {}},
                           "model": _attacker_model(attacker_id, victim)},
                          loader, services=services)
        assert result["action"]["isException"]
        failure = result["action"]["result"]
        assert "murano.common.exceptions.PolicyViolationException" in failure["names"]
        assert f"belongs to environment {victim.env_id}" in failure["message"]
        assert "Attacker" in failure["traceback"]
    finally:
        agents.close()

    assert marker.read_text() == "ran\n", "a plan of A's ran on B's server"
    after = management.request("GET", user)
    assert after["password_hash"] == before["password_hash"]
    assert _broker_login_works(victim.url)
    assert management.request("GET", f"/api/queues/%2F/{name(victim.queue)}")["name"] == \
        victim.queue
    assert victim.call("mark") == "marked"  # and B still works
