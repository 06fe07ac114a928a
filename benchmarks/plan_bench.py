"""A plan of HelloWeb with 50 servers against its deploy, as a user runs them.

Each run makes a private folder with the model (``examples/hello-web.json`` with
fresh object ids and 50 servers), a state file and a local-cloud state folder
(``MURANO_LOCAL_CLOUD_STATE_DIR``; the servers quota off), then times, each a
process of its own: ``murano-engine plan MODEL -l dsl_packages`` (from nothing),
``murano-engine deploy`` of the same model, ``murano-engine plan MODEL --state
FILE`` (the redeploy of what is deployed), and ``murano-engine destroy``.

What is checked: the plan from nothing lists 50 servers to make, each with its
install and configure plans, and leaves no local-cloud folder; the deploy ends
with the application deployed on 50 servers; the plan of the redeploy makes,
deletes and sends nothing (every server is installed and configured) and leaves
the state file as it was.

Figures: the wall time of the plan from nothing and of the deploy, their ratio
(target, issue #48: a plan under a tenth of its deploy), and the plan of the
redeploy over the deploy (same target).

    python benchmarks/plan_bench.py [--servers 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import figures

from tests.helloweb import hello_web

REPO = Path(__file__).resolve().parent.parent
ENGINE = Path(sys.executable).with_name("murano-engine")
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
#: a plan over its deploy (issue #48)
RATIO_TARGET = 0.1


def _run(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall seconds and standard output of a command that must succeed."""
    import subprocess
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO,
                          check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n"
                         f"{(done.stdout + done.stderr)[-3000:]}")
    return wall, done.stdout


def _check_plan(plan: dict, servers: int) -> None:
    made = plan["servers"]["made"]
    per_server: dict[str, list[str]] = {}
    for entry in plan["plans"]:
        per_server.setdefault(entry["server"], []).append(entry["name"])
    wanted = ["Install the hello-web service", "Configure the hello-web service"]
    if plan["outcome"] != "complete" or len(made) != servers or \
            sorted(per_server) != sorted(s["name"] for s in made) or \
            any(names != wanted for names in per_server.values()):
        raise SystemExit(f"the plan of {servers} servers is not the deploy's: "
                         f"{plan['outcome']}, {len(made)} servers, {len(per_server)} with plans")


def _one(servers: int, env: dict[str, str]) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="plan-bench-") as tmp:
        path, state, cloud = Path(tmp) / "model.json", Path(tmp) / "state.json", \
            Path(tmp) / "cloud"
        path.write_text(json.dumps(hello_web(servers)))
        run_env = dict(env, MURANO_LOCAL_CLOUD_STATE_DIR=str(cloud),
                       MURANO_QUOTAS_SERVERS="-1")
        planned, output = _run([str(ENGINE), "plan", str(path), "-l", "dsl_packages",
                                "--json"], run_env)
        _check_plan(json.loads(output), servers)
        if cloud.exists():
            raise SystemExit(f"the plan made the local cloud's folder {cloud}")
        try:
            deployed, output = _run([str(ENGINE), "deploy", str(path), "-l", "dsl_packages",
                                     "--state", str(state)], run_env)
            if f"is deployed ({servers} units)" not in output:
                raise SystemExit(f"the deploy of {servers} servers did not say so:\n"
                                 f"{output[-3000:]}")
            before = state.read_bytes()
            replanned, output = _run([str(ENGINE), "plan", str(path), "--state", str(state),
                                      "--json"], run_env)
            again = json.loads(output)
            if any(again["servers"].values()) or again["plans"] or state.read_bytes() != before:
                raise SystemExit("the plan of the redeploy of what is deployed changes "
                                 f"something: {again['servers']}, {len(again['plans'])} plans")
        finally:
            _run([str(ENGINE), "destroy", "--state", str(state)], run_env)
        print(f"  {servers} servers: plan {planned:.2f} s, deploy {deployed:.2f} s, plan of "
              f"the redeploy {replanned:.2f} s", flush=True)
        return {"plan": planned, "deploy": deployed, "replan": replanned}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=50)
    options = parser.parse_args()
    from murano_engine.clouds.local.sandbox import missing_for_namespaces
    missing = missing_for_namespaces()
    if missing:
        print(f"skipped: this host lacks {', '.join(missing)}")
        return 0
    env = dict(os.environ, PYTHONPATH=str(REPO))
    count = options.servers
    figures.method(f"HelloWeb (m1.small servers) through `murano-engine plan`, `deploy`, "
                   f"`plan --state` and `destroy`, each a process of its own with a private "
                   f"state file and local-cloud folder; {RUNS} runs of {count} servers; "
                   f"wall time per command; each plan checked against the deploy")
    samples = [_one(count, env) for _ in range(RUNS)]
    deploy = statistics.median(s["deploy"] for s in samples)
    print(f"deploy: {count} servers: median {deploy:.2f} s (spread "
          f"{min(s['deploy'] for s in samples):.2f}-{max(s['deploy'] for s in samples):.2f})")
    figures.figure(f"plan: {count} servers (target: a tenth of the deploy's median)",
                   [s["plan"] for s in samples], "s", RATIO_TARGET * deploy)
    figures.figure(f"plan over deploy, {count} servers",
                   [s["plan"] / s["deploy"] for s in samples], "x", RATIO_TARGET)
    figures.figure(f"plan of the redeploy over deploy, {count} servers",
                   [s["replan"] / s["deploy"] for s in samples], "x", RATIO_TARGET)
    figures.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
