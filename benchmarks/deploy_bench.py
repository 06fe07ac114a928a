"""Deploy 50 Linux instances on the local cloud, send 5 no-op plans to each, destroy.

Figures (targets for a 2-core machine):
* allocation of the 50 servers with their agents ready (wall);
* the plan phase with the real agents (wall) and how many instances ran plans
  at once (all 50);
* the engine's CPU per plan, measured directly: the engine process's CPU time
  while it runs an action sending PLANS_ENGINE plans to agents that answer at
  once, divided by the plans (the action's model load and save included). The
  instant agents replace the agent client where the engine takes it from - the
  region's AgentListener (``for_region``) - and the benchmark checks that every
  plan went to them and none to the broker;
* destroying the 50 servers (the local cloud releases them side by side).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import figures

INSTANCES = int(os.environ.get("BENCH_INSTANCES", "50"))
PLANS = 5

MANIFEST = """\
Format: MuranoPL/1.4
Type: Application
FullName: bench.fleet
Classes:
  bench.fleet.Fleet: Fleet.yaml
"""

FLEET = """\
Namespaces:
  =: bench.fleet
  std: io.murano
  res: io.murano.resources
  sys: io.murano.system
  m: io.murano.metadata.engine
Name: Fleet
Extends: std:Application
Properties:
  count:
    Contract: $.int().notNull()
  plans:
    Contract: $.int().notNull()
  servers:
    Contract: [$.class(res:LinuxMuranoInstance)]
    Usage: Out
  peak:
    Contract: $.int()
    Usage: Out
  running:
    Contract: $.int()
    Usage: Runtime
    Default: 0
Methods:
  deploy:
    Body:
      - $.servers: range($.count).select(new(res:LinuxMuranoInstance, $this,
          name => format('bench-{0}', $), image => 'debian-12', flavor => 'm1.small'))
      - $.servers.pselect($.beginDeploy())
      - $.servers.pselect($.endDeploy())
  runPlans:
    Usage: Action
    Body:
      - $template: new(sys:Resources).yaml('Noop.template')
      - $.peak: 0
      - $.running: 0
      - $.servers.pselect($this.work($, $template))
      - Return: $.peak
  work:
    Arguments:
      - server:
          Contract: $.class(res:LinuxMuranoInstance)
      - template:
          Contract: {}
    Meta:
      - m:Synchronize: {onThis: false}
    Body:
      - $.running: $.running + 1
      - $.peak: max($.peak, $.running)
      - Repeat: $.plans
        Do:
          - $server.agent.call($template, null)
      - $.running: $.running - 1
"""

NOOP = """\
FormatVersion: 2.0.0
Version: 1.0.0
Name: No-op
Body: |
  return noop().stdout
Scripts:
  noop:
    Type: Application
    Version: 1.0.0
    EntryPoint: noop.sh
    Files: []
    Options:
      captureStdout: true
      captureStderr: true
"""


def _package(root: Path) -> Path:
    package = root / "bench.fleet"
    (package / "Classes").mkdir(parents=True)
    (package / "Resources" / "scripts").mkdir(parents=True)
    (package / "manifest.yaml").write_text(MANIFEST)
    (package / "Classes" / "Fleet.yaml").write_text(FLEET)
    (package / "Resources" / "Noop.template").write_text(NOOP)
    (package / "Resources" / "scripts" / "noop.sh").write_text("#!/bin/sh\ntrue\n")
    return root


def _model(plans: int) -> dict:
    return {"Objects": {
        "?": {"id": "b0000000000000000000000000000001", "type": "io.murano.Environment"},
        "name": "bench",
        "defaultNetworks": {"environment": {
            "?": {"id": "b0000000000000000000000000000002",
                  "type": "io.murano.resources.NeutronNetwork"},
            "name": "bench-net"}, "flat": None},
        "applications": [{
            "?": {"id": "b0000000000000000000000000000003", "type": "bench.fleet.Fleet"},
            "count": INSTANCES, "plans": plans}]}}


class InstantAgents:
    """Agents that answer every plan at once (no broker, no agent, no script).

    Installed as the ``agents`` service, they are what the engine reaches: the
    region's AgentListener asks them ``for_region``, and they hand out instant
    agents for that region too. Plan building stays the real client's (engine work).
    """

    def __init__(self, real: object, counter: list[int] | None = None) -> None:
        self.real = real
        self.calls = counter if counter is not None else [0]

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    def for_region(self, region: str) -> InstantAgents:
        return InstantAgents(self.real.for_region(region), self.calls)

    def listen(self) -> None:
        return None

    def send(self, queue: str, plan: dict, timeout: float = 0) -> str:
        self.calls[0] += 1
        return str(plan.get("ID"))

    def call(self, queue: str, plan: dict, timeout: float, interrupted: object = None) -> object:
        self.calls[0] += 1
        return ""

    def is_ready(self, queue: str, timeout: float = 0) -> bool:
        return True


class _Counted:
    """The real agent client, counting the plans it sends (there and in its regions)."""

    def __init__(self, real: object, counter: list[int]) -> None:
        self.real = real
        self.calls = counter

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    def for_region(self, region: str) -> _Counted:
        return _Counted(self.real.for_region(region), self.calls)

    def call(self, *args: object, **kwargs: object) -> object:
        self.calls[0] += 1
        return self.real.call(*args, **kwargs)


class Fleet:
    """One deployed fleet: its model, and the engine that runs tasks on it."""

    def __init__(self, packages: Path, state_dir: Path) -> None:
        from murano_engine.dsl.packages import PackageLoader
        from murano_engine.engine.config import load_config
        from murano_engine.engine.interpreter import build_interpreter
        from murano_engine.engine.services import engine_services

        config = load_config(None, {"MURANO_LOCAL_CLOUD_STATE_DIR": str(state_dir)})
        self.services = engine_services(config)
        self.real_agents = self.services["agents"]
        self.loader = PackageLoader([packages], build_interpreter())
        self.model: dict = _model(PLANS)

    def run(self, action: dict | None, agents: object) -> object:
        from murano_engine.engine.tasks import run_task
        task = {"id": ENVIRONMENT, "model": self.model, "action": action}
        result = run_task(task, self.loader, reporter=lambda entry: None,
                          services=dict(self.services, agents=agents))
        if action is not None and result["action"]["isException"]:
            raise SystemExit(json.dumps(result["action"]["result"], indent=2))
        self.model = result["model"]
        return result["action"]["result"] if action is not None else None

    def plans(self, count: int) -> None:
        self.model["Objects"]["applications"][0]["plans"] = count

    def close(self) -> None:
        from murano_engine.engine.services import close_services
        close_services(self.services)


ENVIRONMENT = "b0000000000000000000000000000001"
APPLICATION = "b0000000000000000000000000000003"
PLANS_ENGINE = 20  # per instance, for the engine's CPU per plan
RUNS = int(os.environ.get("BENCH_RUNS", "3"))


def main() -> None:
    from murano_engine.dsl import concurrency
    concurrency.setup()
    with tempfile.TemporaryDirectory() as tmp:
        packages = _package(Path(tmp) / "packages")
        fleet = Fleet(packages, Path(tmp) / "state")
        try:
            _measure(fleet)
        finally:
            fleet.close()
    figures.finish()


def _measure(fleet: Fleet) -> None:
    deploy = {"object_id": ENVIRONMENT, "method": "deploy", "args": {}}
    plans = {"object_id": APPLICATION, "method": "runPlans", "args": {}}
    sent = [0]
    real = _Counted(fleet.real_agents, sent)
    figures.method(f"{INSTANCES} LinuxMuranoInstances on the local cloud, real murano-agents "
                   f"over RabbitMQ; wall time of one run each")
    started = time.perf_counter()
    fleet.run(deploy, real)
    figures.figure(f"allocation: {INSTANCES} servers, agents ready",
                   [time.perf_counter() - started], "s", 60)
    fleet.plans(PLANS)
    sent[0] = 0
    started = time.perf_counter()
    peak = fleet.run(plans, real)
    wall = time.perf_counter() - started
    if sent[0] != INSTANCES * PLANS:
        raise SystemExit(f"the real agents got {sent[0]} plans, not {INSTANCES * PLANS}")
    figures.figure(f"plan phase: {INSTANCES * PLANS} no-op script plans, real agents", [wall],
                   "s", 30)
    figures.figure("instances running plans at once", [peak], "instances", INSTANCES,
                   higher_is_better=True)

    total = INSTANCES * PLANS_ENGINE
    figures.method(f"engine only: an action sending {total} plans ({PLANS_ENGINE} per "
                   f"instance) to instant agents; the engine process's CPU time during it / "
                   f"{total}, median of {RUNS} runs")
    fleet.plans(PLANS_ENGINE)
    samples = []
    for _ in range(RUNS):
        instant = InstantAgents(fleet.real_agents)
        sent[0] = 0
        cpu = time.process_time()
        fleet.run(plans, instant)
        samples.append((time.process_time() - cpu) / total)
        if instant.calls[0] != total or sent[0]:
            raise SystemExit(f"instant agents got {instant.calls[0]} of {total} plans, "
                             f"the broker {sent[0]}: the engine-only figure would be wrong")
    figures.figure("engine CPU per plan", samples, "ms", 5, scale=1000)

    figures.method("destroy: the deployment's model removed (every instance releases its "
                   "servers), wall time")
    started = time.perf_counter()
    fleet.run(None, real)
    figures.figure(f"destroy: {INSTANCES} servers released", [time.perf_counter() - started],
                   "s", 20)


if __name__ == "__main__":
    sys.setrecursionlimit(100_000)
    main()
