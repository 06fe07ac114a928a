"""MuranoPL through the engine: the three workloads timed against the original
Murano, per-operation figures and start-up.

Whole-process figures run ``murano-engine run`` on the classes of
benchmarks/workloads (the same MuranoPL the original Murano ran) and take the
median of BENCH_RUNS runs (3). Their targets are 50 times the original
Murano's time on this machine (benchmarks/README.md). Python's bytecode of the
project is compiled first, as ``pip install`` does.
"""

from __future__ import annotations

import compileall
import gc
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import figures

REPO = Path(__file__).resolve().parents[1]
WORKLOADS = REPO / "benchmarks" / "workloads"
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
STARTUP_RUNS = 5

#: class, arguments, what it prints, the original Murano's seconds
WHOLE_PROCESS = [
    ("Loop", "While loop, 20,000 iterations with a method call", "199990000", 98.6),
    ("Fib", "fib(18) by method recursion, 8,361 calls", "2584", 13.6),
    ("Objects", "2,000 objects with contracts (new() in a While, list +, contracted "
                "list property, For, select().sum())", "1999000", 16.2),
]
SPEEDUP = 50


def _engine(*args: str, cache: str | None = None) -> str:
    env = dict(os.environ)
    if cache is not None:
        env["XDG_CACHE_HOME"] = cache
    done = subprocess.run([sys.executable, "-m", "murano_engine.cli.main", "run", "-l",
                           str(WORKLOADS), *args], capture_output=True, text=True, env=env,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"murano-engine run {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def whole_process() -> None:
    figures.method(f"whole process, `murano-engine run -l benchmarks/workloads "
                   f"bench.workloads.<Class>.run`, median of {RUNS} runs; target: "
                   f"{SPEEDUP}x the original Murano on the same MuranoPL")
    for name, label, expected, murano in WHOLE_PROCESS:
        output = _engine(f"bench.workloads.{name}.run")  # checks the result once
        if expected not in output.replace(" ", "").replace("\n", ""):
            raise SystemExit(f"{name} printed {output!r}, expected {expected}")
        samples = figures.timed(lambda n=name: _engine(f"bench.workloads.{n}.run"), RUNS)
        figures.figure(label, samples, "s", murano / SPEEDUP, murano=murano)


def per_operation() -> None:
    sys.setrecursionlimit(100_000)
    from murano_engine.dsl.executor import Executor
    from murano_engine.dsl.packages import PackageLoader
    from murano_engine.engine.interpreter import build_interpreter

    loader = PackageLoader([WORKLOADS], build_interpreter())

    def call(class_name: str, **kwargs: object) -> object:
        executor = Executor(loader)
        obj = executor.new_object(loader.find_class(f"bench.workloads.{class_name}"))
        return executor.call(obj, "run", (), kwargs)

    for name in ("Loop", "Fib", "Objects"):
        call(name, n=10)  # compiled once, as a long-running engine has it
    gc.freeze()  # as murano-engine run does once it has started
    figures.method(f"in process (the engine already loaded, its start-up objects frozen for "
                   f"the garbage collector as `murano-engine run` does), median of {RUNS} "
                   f"runs of a fresh executor")
    calls = 21891  # fib(20)
    samples = figures.timed(lambda: call("Fib", n=20), RUNS)
    figures.figure(f"method call (fib(20), {calls} calls incl. argument contract)", samples,
                   "us", 10, scale=1e6 / calls)
    samples = figures.timed(lambda: call("Loop", n=20000), RUNS)
    figures.figure("loop iteration (a method call and a property write each)", samples,
                   "us", 15, scale=1e6 / 20000)
    samples = figures.timed(lambda: call("Objects", n=2000), RUNS)
    figures.figure("object with contracted properties (new(), list +, For, sum)", samples,
                   "us", 100, scale=1e6 / 2000)


def startup() -> None:
    figures.method(f"whole process, `murano-engine run` of a trivial method (process start, "
                   f"imports, parser, core library), median of {STARTUP_RUNS} runs; cold: "
                   f"an empty XDG_CACHE_HOME each run (a fresh install, a CI run)")
    trivial = ("bench.workloads.Fib.fib", "--arg", "n=1")
    _engine(*trivial)
    samples = figures.timed(lambda: _engine(*trivial), STARTUP_RUNS)
    figures.figure("start-up, warm user cache", samples, "ms", 300, scale=1000)
    cold = []
    for _ in range(STARTUP_RUNS):
        with tempfile.TemporaryDirectory() as empty:
            cold += figures.timed(lambda e=empty: _engine(*trivial, cache=e), 1)
    figures.figure("start-up, cold (empty user cache)", cold, "ms", 300, scale=1000)


def main() -> None:
    for package in ("murano_engine", "murano_common"):
        compileall.compile_dir(REPO / package, quiet=1)
    whole_process()
    per_operation()
    startup()
    figures.finish()


if __name__ == "__main__":
    main()
