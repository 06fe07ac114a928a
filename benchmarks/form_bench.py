"""What the form budget costs a ui.yaml evaluation, and how soon a hostile one ends.

The ReplicatedKV package's ``UI/ui.yaml`` (two forms and an Application template) is
turned into its model from the answers in docs/api.md, in process: ``RUNS`` times as the API
does it (inside a form budget: every yaql call a step, yaql's size limits, timed
regexes) and as many
times as before the budget (a plain legacy yaql engine and context, no budget in
force), in pairs whose order alternates, CPU time; the cost is the median of the
pairs' ratios. Then the time until ``range(0, 100000000000).sum()`` in a template is
refused. Targets: one evaluation under 50 ms, the budget costs under 25 %, a hostile
template ends within 100 ms.
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

import figures
import yaql.legacy as yaql_legacy

from murano_engine.web import dynamic_ui, form_budget

RUNS = 30
EVALUATION_TARGET = 0.050  # seconds
COST_TARGET = 0.25  # 25%
REFUSAL_TARGET = 0.100  # seconds
REPO = Path(__file__).resolve().parents[1]
UI = (REPO / "dsl_packages/io.murano.apps.linux.ReplicatedKV/UI/ui.yaml").read_text()
ANSWERS = {"appConfiguration": {"name": "kv", "nodeCount": 2},
           "instanceConfiguration": {"osImage": "debian", "flavor": "m1.small"}}
HOSTILE = ("Version: 2.3\nApplication:\n  ?: {type: com.example.App}\n"
           "  value: range(0, 100000000000).sum()\nForms:\n  - f:\n      fields:\n"
           "        - {name: x, type: string}\n")


def budgeted() -> float:
    started = time.process_time()
    with form_budget.spending(form_budget.FormLimits().budget()):
        dynamic_ui.translate(UI, ANSWERS)
    return time.process_time() - started


def as_before() -> float:
    """The same evaluation with the plain legacy engine and context the module used."""
    engine, context = form_budget.engine, form_budget.create_context
    plain = yaql_legacy.YaqlFactory().create()
    form_budget.engine, form_budget.create_context = (lambda: plain), yaql_legacy.create_context
    try:
        started = time.process_time()
        dynamic_ui.translate(UI, ANSWERS)
        return time.process_time() - started
    finally:
        form_budget.engine, form_budget.create_context = engine, context


def refusal() -> float:
    started = time.perf_counter()
    try:
        with form_budget.spending(form_budget.FormLimits().budget()):
            dynamic_ui.translate(HOSTILE, {"f": {"x": "x"}})
    except form_budget.FormLimitError:
        return time.perf_counter() - started
    raise AssertionError("the hostile template was not refused")


def main() -> int:
    budgeted(), as_before()  # imports, caches
    costs, spent = [], []
    for turn in range(RUNS):
        gc.collect()
        if turn % 2:
            before, counted = as_before(), budgeted()
        else:
            counted, before = budgeted(), as_before()
        costs.append(counted / before - 1)
        spent.append(counted)
    figures.method(f"ReplicatedKV's ui.yaml and the answers in docs/api.md to its model, in "
                   f"process, CPU time, {RUNS} runs within the form budget and {RUNS} as "
                   f"before it (plain legacy yaql), in turn; the cost is each pair's ratio")
    figures.figure("form: one ReplicatedKV evaluation within the budget (CPU)", spent, "ms",
                   EVALUATION_TARGET * 1000, scale=1000)
    figures.figure("form: cost of the budget (per pair of runs)", costs, "%",
                   COST_TARGET * 100, scale=100)
    figures.method("range(0, 100000000000).sum() in an Application template, wall time "
                   f"until the FormLimitError, {RUNS} runs")
    figures.figure("form: a hostile template refused", [refusal() for _ in range(RUNS)],
                   "ms", REFUSAL_TARGET * 1000, scale=1000)
    figures.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
