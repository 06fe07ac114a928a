"""MuranoPL workloads through the engine; prints per-operation figures.

Targets on a 2-core machine: a method call under 25 us, a loop iteration
under 15 us, and `murano-engine run` start-up under 0.3 s.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.interpreter import build_interpreter

MANIFEST = """\
Format: MuranoPL/1.4
Type: Library
FullName: bench.dsl
Classes:
  bench.dsl.Work: Work.yaml
  bench.dsl.Item: Item.yaml
"""

WORK = """\
Namespaces:
  =: bench.dsl
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
  objects:
    Body:
      - $made: range(2000).select(new(Item, name => format('item-{0}', $), size => $))
      - Return: len($made)
  fib:
    Arguments:
      - n:
          Contract: $.int()
    Body:
      - If: $n < 2
        Then:
          - Return: $n
      - Return: $.fib($n - 1) + $.fib($n - 2)
  nest:
    Arguments:
      - depth:
          Contract: $.int()
    Body:
      - If: $depth = 0
        Then:
          - Return: 0
      - Return: $.nest($depth - 1) + 1
"""

ITEM = """\
Namespaces:
  =: bench.dsl
Name: Item
Properties:
  name:
    Contract: $.string().notNull()
  size:
    Contract: $.int().check($ >= 0)
  tags:
    Contract: [$.string()]
    Default: [bench]
"""


def _package(root: Path) -> Path:
    pkg = root / "bench.dsl"
    (pkg / "Classes").mkdir(parents=True)
    (pkg / "manifest.yaml").write_text(MANIFEST)
    (pkg / "Classes" / "Work.yaml").write_text(WORK)
    (pkg / "Classes" / "Item.yaml").write_text(ITEM)
    return root


def _timed(func, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = _package(Path(tmp))
        loader = PackageLoader([root], build_interpreter())
        cls = loader.find_class("bench.dsl.Work")

        def call(method: str, *args):
            executor = Executor(loader)
            work = executor.new_object(cls)
            return executor.call(work, method, args)

        def run() -> None:
            call("loop", 100)  # warm up: compile once
            loop = _timed(lambda: call("loop", 20000))
            print(f"loop: 20,000 iterations, each calling a method: {loop * 1000:.1f} ms "
                  f"({loop / 20000 * 1e6:.2f} us per iteration incl. the call)")
            objects = _timed(lambda: call("objects"))
            print(f"objects: 2,000 objects with contracted properties: {objects * 1000:.1f} ms "
                  f"({objects / 2000 * 1e6:.2f} us per object)")
            fib = _timed(lambda: call("fib", 20))
            calls = 21891
            print(f"fib(20) by method recursion: {fib * 1000:.1f} ms, {calls} calls "
                  f"({fib / calls * 1e6:.2f} us per method call)")
            depth = call("nest", 1500)
            print(f"nested calls: a chain of {depth} MuranoPL calls ran")

        sys.setrecursionlimit(100_000)
        run()

        startups = []
        for _ in range(5):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "murano_engine.cli", "run", "-l", str(root),
                            "bench.dsl.Work.fib", "--arg", "n=1"],
                           check=True, capture_output=True)
            startups.append(time.perf_counter() - started)
        print(f"murano-engine run start-up (process start, imports, core library, "
              f"a trivial method): median {statistics.median(startups) * 1000:.0f} ms, "
              f"best {min(startups) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
