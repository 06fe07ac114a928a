"""The original Murano engine beside this one: the same MuranoPL workloads through
both engines in one run, alternating, both medians and the ratio.

It needs a Murano source tree with a virtualenv of its own (it never fetches or
builds one; benchmarks/README.md says how to make it) and, for the package-set
workload, a murano-apps tree:

    MURANO_ORIGINAL  the Murano tree, its virtualenv in ``venv/``
                     (default ~/.cache/murano-engine/murano-original)
    MURANO_APPS      a murano-apps tree (default ~/.cache/murano-engine/murano-apps)
    BENCH_RUNS       runs of the original per workload (3); this engine runs
                     OURS_PER_RUN (5) times beside each of them

Arguments, if any, pick the workloads whose label holds one of them (``murano-apps
model`` runs those two).

Without the Murano tree it says so and exits 0 (CI has none). Every run is a
whole process: ``murano-engine run`` / ``murano-test-runner`` /
``side_by_side/engine_driver.py`` here, ``side_by_side/murano_driver.py`` in
Murano's virtualenv there; each run's output is checked. Runs alternate which
engine goes first, so both see the same machine. This engine's runs last a tenth
of a second, the original's seconds, through which a shared machine's speed
changes: this engine runs five times beside each run of the original, so that its
median too is taken over the machine's ups and downs. The target of each figure is
100 times the original's median of the same run (60 times is the floor).
"""

from __future__ import annotations

import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import figures

REPO = Path(__file__).resolve().parents[1]
WORKLOADS = REPO / "benchmarks" / "workloads"
DRIVERS = REPO / "benchmarks" / "side_by_side"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "murano-engine"
MURANO = Path(os.environ.get("MURANO_ORIGINAL", CACHE / "murano-original"))
APPS = Path(os.environ.get("MURANO_APPS", CACHE / "murano-apps"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
OURS_PER_RUN = 5
SPEEDUP, FLOOR = 100, 60
MODEL_OBJECTS = 500

HOW_TO = f"""\
No original Murano tree at {MURANO} (set MURANO_ORIGINAL): skipped.
Make one (once; see benchmarks/README.md):
  git clone https://opendev.org/openstack/murano {MURANO}   # or any copy of its source
  git -C {MURANO} checkout HEAD~1      # the last tree before the retirement commit
  python3.11 -m venv {MURANO}/venv
  {MURANO}/venv/bin/pip install -r {MURANO}/requirements.txt 'SQLAlchemy<2'
  PBR_VERSION=1.0 {MURANO}/venv/bin/pip install --no-deps {MURANO}
and, for the package-set workload, a copy of openstack/murano-apps at {APPS}."""


@dataclass(frozen=True)
class Workload:
    label: str
    ours: list[str]
    murano: list[str]
    #: checks one run's stdout, raises SystemExit when it is wrong
    check: Callable[[str], None]


def _expect(*texts: str) -> Callable[[str], None]:
    def check(output: str) -> None:
        flat = output.replace(" ", "").replace("\n", "")
        for text in texts:
            if text not in flat:
                raise SystemExit(f"expected {text!r} in the output, got:\n{output[-2000:]}")
    return check


def _loaded(output: str) -> None:
    result = json.loads(output.strip().splitlines()[-1])
    if result["loaded"] < 100:
        raise SystemExit(f"only {result['loaded']} classes loaded: {output[-2000:]}")


def write_model(folder: Path) -> Path:
    """An environment model of MODEL_OBJECTS objects: a root holding the others."""
    items = [{"?": {"id": f"item-{i}", "type": "bench.workloads.Item"},
              "name": f"item-{i}", "size": i, "tags": ["bench", f"tag-{i % 7}"]}
             for i in range(MODEL_OBJECTS - 1)]
    path = folder / "model.json"
    path.write_text(json.dumps({"Objects": {
        "?": {"id": "root", "type": "bench.workloads.Objects"}, "items": items}}))
    return path


def workloads(model: Path) -> list[Workload]:
    python = sys.executable
    murano = [str(MURANO / "venv" / "bin" / "python"), "-W", "ignore",
              str(DRIVERS / "murano_driver.py")]
    core = ["-l", str(MURANO / "meta")]
    ours_run = [python, "-m", "murano_engine.cli.main", "run", "-l", str(WORKLOADS)]
    found = [
        Workload("While loop, 20,000 iterations with a method call",
                 [*ours_run, "bench.workloads.Loop.run"],
                 [*murano, "run", *core, "-l", str(WORKLOADS), "bench.workloads.Loop.run"],
                 _expect("199990000")),
        Workload("fib(18) by method recursion, 8,361 calls",
                 [*ours_run, "bench.workloads.Fib.run"],
                 [*murano, "run", *core, "-l", str(WORKLOADS), "bench.workloads.Fib.run"],
                 _expect("2584")),
        Workload("2,000 objects with contracts (new(), list +, For, select().sum())",
                 [*ours_run, "bench.workloads.Objects.run"],
                 [*murano, "run", *core, "-l", str(WORKLOADS), "bench.workloads.Objects.run"],
                 _expect("1999000")),
        Workload("murano-test-runner, a package of 50 tests (bench.suite)",
                 [python, "-m", "murano_engine.cli.test_runner", "-l", str(WORKLOADS),
                  "bench.suite"],
                 [*murano, "test", *core, "-l", str(WORKLOADS), "bench.suite"],
                 _expect("50passed,0failed")),
        Workload(f"environment model of {MODEL_OBJECTS} objects: deserialize and serialize",
                 [python, str(DRIVERS / "engine_driver.py"), "model", "-l", str(WORKLOADS),
                  str(model)],
                 [*murano, "model", *core, "-l", str(WORKLOADS), str(model)],
                 lambda output: None if int(output.split()[-1]) > 100_000 else
                 _expect("a serialized model")(output)),
    ]
    if APPS.is_dir():
        found.append(Workload(
            f"murano-apps ({sum(1 for _ in APPS.rglob('manifest.yaml'))} packages): "
            f"load every class",
            [python, str(DRIVERS / "engine_driver.py"), "load", "-l", str(APPS)],
            [*murano, "load", *core, "-l", str(APPS)], _loaded))
    else:
        print(f"no murano-apps tree at {APPS} (set MURANO_APPS): its workload is skipped")
    return found


def _run(command: list[str], check: Callable[[str], None]) -> tuple[float, float]:
    """Wall and CPU seconds of one whole-process run, its output checked."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False,
                          cwd=tempfile.gettempdir())
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}"
                         f"\n{done.stderr[-3000:]}")
    check(done.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def compare(workload: Workload) -> None:
    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    _run(workload.ours, workload.check)  # warms the file cache and the user cache
    for index in range(RUNS):
        pair = [(workload.ours, ours, OURS_PER_RUN), (workload.murano, theirs, 1)]
        for command, samples, times in pair if index % 2 == 0 else reversed(pair):
            samples.extend(_run(command, workload.check) for _ in range(times))
    murano_wall = statistics.median(w for w, _ in theirs)
    result = figures.figure(workload.label, [w for w, _ in ours], "s",
                            murano_wall / SPEEDUP, murano=murano_wall)
    ratio = murano_wall / result.median
    cpu_ours = statistics.median(c for _, c in ours)
    cpu_murano = statistics.median(c for _, c in theirs)
    print(f"  original Murano median {murano_wall:.3g} s (spread "
          f"{min(w for w, _ in theirs):.3g}-{max(w for w, _ in theirs):.3g}); ratio "
          f"{ratio:.0f}x ({'above' if ratio >= FLOOR else 'BELOW'} the {FLOOR}x floor); "
          f"CPU medians {cpu_ours:.3g} s vs {cpu_murano:.3g} s ({cpu_murano / cpu_ours:.0f}x)",
          flush=True)


def main() -> None:
    if not (MURANO / "venv" / "bin" / "python").is_file() or not (MURANO / "meta").is_dir():
        print(HOW_TO)
        return
    for package in ("murano_engine", "murano_common"):  # as ``pip install`` leaves it, and
        compileall.compile_dir(REPO / package, quiet=1)  # the original's venv is
    compileall.compile_file(DRIVERS / "engine_modes.py", quiet=1)
    load = os.getloadavg()
    figures.method(
        f"whole process, this engine and the original Murano ({MURANO}) alternating, "
        f"both with their bytecode compiled, "
        f"{RUNS} runs of the original, {OURS_PER_RUN} of this engine beside each, "
        f"median wall time; each run's output checked; target: "
        f"{SPEEDUP}x the original's median of this run ({FLOOR}x the floor); CPU "
        f"(user+sys) medians beside; load average at the start {load[0]:.1f} on "
        f"{os.cpu_count()} CPUs (a machine shared with other work makes both slower)")
    with tempfile.TemporaryDirectory() as folder:
        chosen = sys.argv[1:]
        for workload in workloads(write_model(Path(folder))):
            if not chosen or any(word in workload.label for word in chosen):
                compare(workload)
    figures.finish()


if __name__ == "__main__":
    main()
