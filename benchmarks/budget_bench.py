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

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from murano_engine.dsl import instructions
from murano_engine.dsl.budget import CHECK_EVERY
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.interpreter import build_interpreter

RUNS = 15
ITERATIONS = 20_000
TARGET = 0.05

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
    turn so a change of the machine's load falls on both alike."""
    counted, uncounted = [], []
    counting = instructions.Block.__call__
    for _ in range(RUNS):
        started = time.process_time()
        run()
        counted.append(time.process_time() - started)
        instructions.Block.__call__ = uncounted_block_call
        try:
            started = time.process_time()
            executor = run()
            uncounted.append(time.process_time() - started)
        finally:
            instructions.Block.__call__ = counting
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

        run()  # compile once
        counted, uncounted, executor = alternating(run)
        if executor.budget.left != min(CHECK_EVERY, executor.budget.steps or CHECK_EVERY):
            print("budget: statements were still counted with the count taken out; "
                  "the benchmark no longer matches Block")
            return 1

    with_budget, without = statistics.median(counted), statistics.median(uncounted)
    overhead = with_budget / without - 1
    verdict = "PASS" if overhead < TARGET else "FAIL"
    print(f"budget: While loop of {ITERATIONS:,} iterations with a method call, median of "
          f"{RUNS} runs each: {with_budget * 1000:.1f} ms counting steps "
          f"(spread {min(counted) * 1000:.1f}-{max(counted) * 1000:.1f}), "
          f"{without * 1000:.1f} ms without (spread {min(uncounted) * 1000:.1f}-"
          f"{max(uncounted) * 1000:.1f}); the budget costs {overhead:+.1%}; "
          f"target < {TARGET:.0%}: {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
