"""Deploy 50 Linux instances with 5 no-op plans each on the local cloud.

Prints the wall-clock time of each phase, how many instances were deploying
at once, and the engine's time per plan. Target: under 5 ms of engine
overhead per plan, all 50 instances deploying in parallel.

Per-plan figures are differences: a deploy with 5 plans per instance minus
the same deploy with none, divided by the plans. The engine's own time is
measured twice: as the process's CPU time during the real run (an upper
bound: the in-process agents share the process; the scripts do not count),
and in a run whose agents answer at once, which leaves only the engine's work
(MuranoPL, plan building, sending, correlation).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

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
      - $template: new(sys:Resources).yaml('Noop.template')
      - $.peak: 0
      - $.servers.pselect($this.work($, $template))
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
    """Agents that answer every plan at once (no broker, no agent, no script)."""

    def __init__(self, real: object) -> None:
        self.real = real

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    def call(self, queue: str, plan: dict, timeout: float) -> object:
        return ""

    def is_ready(self, queue: str, timeout: float) -> bool:
        return True


def _deploy(packages: Path, state_dir: Path, instant: bool,
            plans: int) -> tuple[dict, float, float]:
    from murano_engine.config import load_config
    from murano_engine.deploy import close_services, engine_services
    from murano_engine.dsl.packages import PackageLoader
    from murano_engine.interpreter import build_interpreter
    from murano_engine.tasks import run_task

    config = load_config(None, {"MURANO_LOCAL_CLOUD_STATE_DIR": str(state_dir)})
    services = engine_services(config)
    if instant:
        services["agents"] = InstantAgents(services["agents"])
    reports: list[dict] = []
    loader = PackageLoader([packages], build_interpreter())
    task = {"id": "b0000000000000000000000000000001", "model": _model(plans),
            "action": {"object_id": "b0000000000000000000000000000001", "method": "deploy",
                       "args": {}}}
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        result = run_task(task, loader, reporter=reports.append, services=services)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if result["action"]["isException"]:
            raise SystemExit(json.dumps(result["action"]["result"], indent=2))
        destroy = {"id": task["id"], "model": result["model"], "action": None}
        run_task(destroy, loader, reporter=reports.append, services=services)
    finally:
        close_services(services)
    app = result["model"]["Objects"]["applications"][0]
    return app, wall, cpu


def main() -> None:
    from murano_engine import concurrency
    concurrency.setup()
    plans = INSTANCES * PLANS
    with tempfile.TemporaryDirectory() as tmp:
        packages = _package(Path(tmp) / "packages")
        for label, instant in (("real agents", False), ("instant agents", True)):
            base_app, base_wall, base_cpu = _deploy(packages, Path(tmp) / f"{label}-0",
                                                    instant, 0)
            app, wall, cpu = _deploy(packages, Path(tmp) / label, instant, PLANS)
            print(f"{label}: {INSTANCES} instances; allocation {base_wall:.2f} s; with "
                  f"{PLANS} no-op plans each ({plans} plans) {wall:.2f} s; "
                  f"{app['peak']} instances ran plans at once")
            print(f"  per plan: {(wall - base_wall) * 1000 / plans:.2f} ms wall, "
                  f"{(cpu - base_cpu) * 1000 / plans:.2f} ms CPU"
                  + (" (engine only)" if instant else " (engine + in-process agents)"))


if __name__ == "__main__":
    sys.setrecursionlimit(100_000)
    main()
