"""io.murano.system.Agent / AgentListener driven from MuranoPL, against a real in-process
agent over ``memory://`` and over the real RabbitMQ."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from murano_agent.config import load_config as load_agent_config
from murano_agent.service import AgentService
from murano_engine.dsl.errors import MuranoPlException
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.objects import MuranoObject
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.config import load_config
from murano_engine.engine.interpreter import build_interpreter
from murano_engine.messaging import AgentClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "agent"))
from agent_harness import AMQP_URL, delete_queues, require_broker  # noqa: E402

DRIVER = """\
Namespaces:
  =: test.agents
  std: io.murano
  sys: io.murano.system
  conf: io.murano.configuration
  lib: test.agents.lib

Name: Driver

Properties:
  env:
    Contract: $.class(std:Environment)
    Usage: Runtime
  agent:
    Contract: $.class(sys:Agent)
    Usage: Runtime
  idle:
    Contract: $.class(sys:Agent)
    Usage: Runtime

Methods:
  setUp:
    Body:
      - $.env: new(std:Environment, name => 'agents')
      - $host: new(Host, $.env)
      - $.agent: new(sys:Agent, host => $host)
      - $.idle: new(sys:Agent, host => new(Host, $.env))
      - Return: [$.agent.queueName(), $.env.agentListener.queueName(), id($.env), id($host),
          $.idle.queueName()]

  echo:
    Arguments:
      - text:
          Contract: $.string()
    Body:
      - $template:
          FormatVersion: '2.1.0'
          Name: echo
          Parameters:
            text: $text
          Body: return run(args.text).stdout
          Scripts:
            run:
              Type: Application
              EntryPoint: echo.sh
              Options:
                captureStderr: true
      - Return: $.agent.call($template, new(sys:Resources))

  fail:
    Body:
      - $template:
          FormatVersion: '2.1.0'
          Body: return run()
          Scripts:
            run:
              Type: Application
              EntryPoint: fail.sh
      - Try:
          - $.agent.call($template, new(sys:Resources))
        Catch:
          - With: 'murano.engine.system.agent.AgentException'
            As: e
            Do:
              - Return: [$e.name, $e.message, $e.extra.details, $e.extra.errorCode]

  raw:
    Body:
      - Return: $.agent.callRaw(dict(FormatVersion => '2.0.0', Body => 'return 6 * 7',
          Scripts => dict(), Files => dict()))

  ready:
    Arguments:
      - timeout:
          Contract: $.int()
    Body:
      - Return: [$.agent.isReady($timeout), $.idle.isReady($timeout)]

  timeout:
    Arguments:
      - name:
          Contract: $.string()
    Body:
      - Try:
          - $.idle.callRaw(dict(FormatVersion => '2.0.0', Body => 'return', Scripts => dict(),
              Files => dict()), 0.2)
        Catch:
          - With: $name
            As: e
            Do:
              - Return: [$e.name, $e.message]

  refused:
    Body:
      - Try:
          - $.agent.call(dict(FormatVersion => '2.0.0', Body => 'return'), null)
        Catch:
          - With: 'murano.common.exceptions.PolicyViolationException'
            As: e
            Do:
              - Return: $e.message

  key:
    Body:
      - Return: $.agent.signingKey('>')

  shell:
    Arguments:
      - command:
          Contract: $.string()
    Body:
      - Return: conf:Linux.runCommand($.agent, $command)

  relayed:
    Body:
      - $template:
          FormatVersion: '2.1.0'
          Body: return run('relayed').stdout
          Scripts:
            run:
              Type: Application
              EntryPoint: echo.sh
      - Return: lib:Relay.call($.agent, $template, new(sys:Resources))
"""

RELAY = """\
Namespaces:
  =: test.agents.lib

# A helper in another package: the scripts still come from the package that
# made the Resources object, as in Murano.
Name: Relay

Methods:
  call:
    Usage: Static
    Arguments:
      - agent:
          Contract: $
      - template:
          Contract: {}
      - resources:
          Contract: $
    Body:
      - Return: $agent.call($template, $resources)
"""

HOST = """\
Namespaces:
  =: test.agents
  std: io.murano

Name: Host

Extends: std:CloudResource
"""

SCRIPTS = {
    "echo.sh": '#!/bin/sh\necho "got $1"\n',
    "fail.sh": "#!/bin/sh\necho partial\necho broken >&2\nexit 3\n",
}


@pytest.fixture(scope="module")
def loader(tmp_path_factory: pytest.TempPathFactory) -> PackageLoader:
    root = tmp_path_factory.mktemp("packages") / "test.agents"
    (root / "Classes").mkdir(parents=True)
    (root / "Resources" / "scripts").mkdir(parents=True)
    (root / "Classes" / "Driver.yaml").write_text(DRIVER)
    (root / "Classes" / "Host.yaml").write_text(HOST)
    for name, text in SCRIPTS.items():
        (root / "Resources" / "scripts" / name).write_text(text)
    (root / "manifest.yaml").write_text(
        textwrap.dedent("""\
            Format: 1.4
            Type: Application
            FullName: test.agents
            Classes:
              test.agents.Driver: Driver.yaml
              test.agents.Host: Host.yaml
            Require:
              test.agents.lib:
            """)
    )
    lib = root.parent / "test.agents.lib"
    (lib / "Classes").mkdir(parents=True)
    (lib / "Classes" / "Relay.yaml").write_text(RELAY)
    (lib / "manifest.yaml").write_text(
        "Format: 1.4\nType: Library\nFullName: test.agents.lib\n"
        "Classes:\n  test.agents.lib.Relay: Relay.yaml\n")
    return PackageLoader([root.parent], build_interpreter())


class Run:
    """One engine run: an executor with its own agents service, a Driver object set up,
    and a real agent serving the Driver's instance."""

    def __init__(
        self,
        loader: PackageLoader,
        url: str,
        folder: Path,
        signing_key_pem: bytes | None = None,
        **engine: Any,
    ) -> None:
        self.config = load_config(None, environ={})
        self.config["engine"].update(agent_timeout=10, **engine)
        self.agents = AgentClient(url, signing_key_pem=signing_key_pem)
        services = {"agents": self.agents, "config": self.config}
        self.executor = Executor(loader, services=services)
        driver = loader.find_class("test.agents.Driver")
        self.driver: MuranoObject = self.executor.new_object(driver)
        self.queue, self.results, self.env_id, self.host_id, self.idle_queue = \
            self.call("setUp")
        cfg = load_agent_config(
            "[DEFAULT]\nplan_timeout = 10\n",
            {
                "storage": folder / "agent",
                "rabbitmq.url": url,
                "rabbitmq.input_queue": self.queue,
                "rabbitmq.result_routing_key": self.results,
            },
        )
        self.service = AgentService(cfg)
        self.service.start()

    def call(self, name: str, *args: Any) -> Any:
        return self.executor.call(self.driver, name, list(args))

    def close(self) -> None:
        self.service.stop()
        self.agents.close()


@pytest.fixture(params=["memory", "rabbitmq"])
def url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory://"
    require_broker()
    return AMQP_URL


@pytest.fixture
def run(loader: PackageLoader, url: str, tmp_path: Path) -> Iterator[Run]:
    started = Run(loader, url, tmp_path)
    yield started
    started.close()
    if url != "memory://":  # (the idle host's queue holds the plans of the timeout test)
        delete_queues([started.queue, started.results, started.idle_queue])


def test_queue_names_follow_the_environment_and_host_ids(run: Run) -> None:
    assert run.queue == f"e{run.env_id}-h{run.host_id}".lower()
    # the environment (the engine's id of it), then <env name>-<random>
    assert run.results.startswith(f"-execution-results-e{run.env_id}-agents-".lower())


def test_call_returns_the_script_output(run: Run) -> None:
    assert run.call("echo", "hello") == "got hello"
    assert run.call("raw") == 42


def test_scripts_come_from_the_package_that_made_the_resources(run: Run) -> None:
    assert run.call("relayed") == "got relayed"


def test_core_library_run_command_goes_through_the_agent(run: Run) -> None:
    result = run.call("shell", "echo out; echo err >&2")
    assert (result["exitCode"], result["stdout"], result["stderr"]) == (0, "out", "err")


def test_failing_script_is_catchable_as_agent_exception_with_details(run: Run) -> None:
    name, message, details, code = run.call("fail")
    assert name == "murano.engine.system.agent.AgentException"
    assert "exited with code 3" in message
    assert details == {"exitCode": 3, "stdout": "partial", "stderr": "broken"}
    assert code == 100


def test_timeout_is_catchable_by_both_names(run: Run) -> None:
    for name in (
        "murano.engine.system.agent.TimeoutException",
        "murano.common.exceptions.TimeoutException",
    ):
        caught, message = run.call("timeout", name)
        assert caught == name
        assert "did not respond within 0.2 seconds" in message


def test_is_ready_answers_for_a_serving_agent_only(loader: PackageLoader, tmp_path: Path) -> None:
    run = Run(loader, "memory://", tmp_path)
    try:
        assert run.call("ready", 1) == (True, False)
    finally:
        run.close()


def test_disabled_agent_raises_policy_violation(loader: PackageLoader, tmp_path: Path) -> None:
    run = Run(loader, "memory://", tmp_path, disable_murano_agent=True)
    try:
        assert "disallowed by the server configuration" in run.call("refused")
        with pytest.raises(MuranoPlException) as caught:
            run.call("raw")
        assert "murano.dsl.exceptions.PolicyViolationException" in caught.value.names
    finally:
        run.close()


def test_signing_key_is_the_public_half_with_prefixed_lines(
    loader: PackageLoader, tmp_path: Path
) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    run = Run(loader, "memory://", tmp_path, signing_key_pem=pem)
    try:
        lines = run.call("key").splitlines()
        assert lines[0] == ">-----BEGIN RSA PUBLIC KEY-----"
        assert all(line.startswith(">") for line in lines)
    finally:
        run.close()
