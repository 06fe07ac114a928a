"""What every benchmark prints: its method, the median and spread of its runs, the
target and PASS or FAIL (and the original Murano's figure where there is one).

A benchmark script calls :func:`figure` once per figure and ends with
:func:`finish`, which exits non-zero when a figure missed its target.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Figure:
    name: str
    median: float
    low: float
    high: float
    runs: int
    unit: str
    target: float
    passed: bool


_FIGURES: list[Figure] = []


def host_cpu() -> float:
    """CPU seconds this host's processors have spent busy since boot (``/proc/stat``),
    for a benchmark to count what all processes spent while it ran."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    busy = sum(int(v) for i, v in enumerate(fields) if i not in (3, 4))  # not idle, iowait
    return busy / os.sysconf("SC_CLK_TCK")


def method(text: str) -> None:
    """Say how the figures that follow are measured."""
    print(f"method: {text}")


def timed(func: Callable[[], object], runs: int) -> list[float]:
    """Wall seconds of ``runs`` calls of ``func``."""
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        func()
        out.append(time.perf_counter() - started)
    return out


def figure(name: str, samples: list[float], unit: str, target: float, *,
           higher_is_better: bool = False, scale: float = 1.0,
           murano: float | None = None) -> Figure:
    """Print one figure: ``samples`` (times ``scale``, in ``unit``) against ``target``."""
    values = [s * scale for s in samples]
    median = statistics.median(values)
    passed = median >= target if higher_is_better else median < target
    result = Figure(name, median, min(values), max(values), len(values), unit, target, passed)
    _FIGURES.append(result)
    relation = ">=" if higher_is_better else "<"
    text = (f"{name}: median {_num(median)} {unit} (spread {_num(min(values))}-"
            f"{_num(max(values))}, {len(values)} runs); target {relation} {_num(target)} {unit}")
    if murano is not None:
        text += f"; original Murano {_num(murano)} {unit}, {murano / median:.0f}x"
    print(f"{text}: {'PASS' if passed else 'FAIL'}", flush=True)
    return result


def _num(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def finish() -> None:
    """Exit 1 when any figure failed its target."""
    failed = [f.name for f in _FIGURES if not f.passed]
    if failed:
        print(f"FAILED targets: {', '.join(failed)}", flush=True)
        sys.exit(1)
