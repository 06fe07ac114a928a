"""What the execution budget costs the interpreter.

Every statement a block runs counts one step of the task's budget (a
decrement and a comparison; the clock is read every 1,000 steps). This
benchmark runs one MuranoPL workload (a While loop of 20,000 iterations, each
calling a method that updates a property) as the engine runs it, and again
with the step count taken out of ``Block`` (the statement runner), then
prints the median of each and the difference. Target: the budget costs under
5% (issue #11: the interpreter within 5% of its speed before the budgets).
"""

from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import figures

from murano_engine.dsl import instructions
from murano_engine.dsl.budget import CHECK_EVERY
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.interpreter import build_interpreter

RUNS = 16
ITERATIONS = 20_000
TARGET = 0.05  # 5%

MANIFEST = """\
Format: MuranoPL/1.4
Type: Library
FullName: bench.budget
Description: the budget benchmark's workload
Classes:
  bench.budget.Work: Work.yaml
"""

WORK = """\
Namespaces:
  =: bench.budget
Name: Work
Properties:
  total:
    Contract: $.int()
    Default: 0
    Usage: Runtime
Methods:
  step:
    Arguments:
      - i:
          Contract: $.int().notNull()
    Body:
      - $.total: $.total + $i
  loop:
    Arguments:
      - n:
          Contract: $.int()
    Body:
      - $i: 0
      - While: $i < $n
        Do:
          - $.step($i)
          - $i: $i + 1
      - Return: $.total
"""


def uncounted_block_call(self: instructions.Block, ctx: Any) -> Any:
    """``Block.__call__`` without the step count: the interpreter as it was before budgets."""
    frame = ctx.frame
    for position, statement in self.statements:
        frame.position = position
        signal = statement(ctx)
        if signal is not None:
            return signal
    return None


def alternating(run: Callable[[], Executor]) -> tuple[list[float], list[float], Executor]:
    """``RUNS`` CPU timings of ``run`` as it is and as many without the step count, taken in
    turn (which goes first alternates) so the machine's load and the garbage a run leaves
    fall on both alike."""
    counted, uncounted = [], []
    counting = instructions.Block.__call__
    executor = None

    def timed(uncounted_run: bool) -> float:
        nonlocal executor
        gc.collect()
        instructions.Block.__call__ = uncounted_block_call if uncounted_run else counting
        try:
            started = time.process_time()
            outcome = run()
            spent = time.process_time() - started
        finally:
            instructions.Block.__call__ = counting
        if uncounted_run:
            executor = outcome
        return spent

    for turn in range(RUNS):
        first_uncounted = turn % 2 == 1
        first = timed(first_uncounted)
        second = timed(not first_uncounted)
        counted.append(second if first_uncounted else first)
        uncounted.append(first if first_uncounted else second)
    return counted, uncounted, executor


def main() -> int:
    sys.setrecursionlimit(100_000)
    with tempfile.TemporaryDirectory() as tmp:
        package = Path(tmp) / "bench.budget"
        (package / "Classes").mkdir(parents=True)
        (package / "manifest.yaml").write_text(MANIFEST)
        (package / "Classes" / "Work.yaml").write_text(WORK)
        loader = PackageLoader([Path(tmp)], build_interpreter())
        cls = loader.find_class("bench.budget.Work")
        expected = sum(range(ITERATIONS))

        def run() -> Executor:
            executor = Executor(loader)
            result = executor.call(executor.new_object(cls), "loop", [ITERATIONS])
            assert result == expected, result
            return executor

        figures.method(f"a While loop of {ITERATIONS:,} iterations with a method call, CPU "
                       f"time, {RUNS} runs as the engine runs it and {RUNS} with the step count "
                       "taken out of Block, in turn; the cost is each pair's ratio")
        run()  # compile once
        counted, uncounted, executor = alternating(run)
        if executor.budget.left != min(CHECK_EVERY, executor.budget.steps or CHECK_EVERY):
            print("budget: statements were still counted with the count taken out; "
                  "the benchmark no longer matches Block")
            return 1

    print(f"budget: CPU time of the loop, median {statistics.median(counted) * 1000:.1f} ms "
          f"counting steps, {statistics.median(uncounted) * 1000:.1f} ms without")
    figures.figure("budget: cost of counting steps (per pair of runs)",
                   [c / u - 1 for c, u in zip(counted, uncounted, strict=True)], "%",
                   TARGET * 100, scale=100)
    figures.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
