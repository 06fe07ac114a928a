"""ui.yaml under the form budget: hostile expressions and validators end in a clean limit
error, quickly and in bounded memory, in-process and through ``murano-engine ui-model``."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from murano_engine.web import dynamic_ui, form_budget
from murano_engine.web.form_budget import FormLimitError, FormLimits, spending

ENDLESS = "range(0, 100000000000).sum()"
HUGE = "len(range(0, 300000000).toList())"
NESTED = "range(1000).select(range(1000).select(range(1000).sum()).sum()).sum()"
# backtracks without end under ``re``; ``regex`` fails it at once
NESTED_PLUS = "^(a+)+$"
# backtracks without end under ``regex`` too
ALTERNATIVES = "^(a|a)*$"
ANSWER = "a" * 40 + "!"
#: seconds and megabytes a hostile evaluation may take in these tests
WITHIN_SECONDS = 10
WITHIN_MB = 600


def definition(template: str = "$.f.x", regexp: str | None = None) -> str:
    validator = f", regexpValidator: '{regexp}'" if regexp else ""
    return (f"Version: 2.3\nApplication:\n  ?: {{type: com.example.App}}\n"
            f"  value: {template}\nForms:\n  - f:\n      fields:\n"
            f"        - {{name: x, type: string{validator}}}\n")


def translate(text: str, answer: str = "x", limits: FormLimits | None = None) -> dict:
    with spending((limits or FormLimits()).budget()):
        return dynamic_ui.translate(text, {"f": {"x": answer}}, "ui.yaml")


@pytest.mark.parametrize(("template", "says"), [
    (ENDLESS, "more than 1000 items"),
    (HUGE, "more than 1000 items"),
    (NESTED, "wall-clock budget of 5 s"),
    ("$.f.x * 100000000", "larger than 262144 bytes"),
    ("pow(10, 10000000) > 5", "integer power larger than 65536 bits"),
    ("$.f.x.replace('x', range(1000).select('y').join('')).replace('y', $.f.x * 1000)",
     "larger than 262144 bytes"),
    ("regex('').replace($.f.x * 200000, $.f.x * 200000)", "larger than 262144 bytes"),
    ("len(range(0, 30).select(pow(2, 60000)).reduce($1 * $2)) > 0",
     "integer product larger than 65536 bits"),
])
def test_hostile_templates_end_in_a_limit_error_naming_the_expression(template, says):
    started = time.monotonic()
    with pytest.raises(FormLimitError) as caught:
        translate(definition(template))
    assert time.monotonic() - started < WITHIN_SECONDS
    assert says in str(caught.value) and template in str(caught.value)


def test_the_step_limit_ends_an_evaluation():
    with pytest.raises(FormLimitError, match="step budget of 500 steps"):
        translate(definition("range(100).select(range(100).sum()).sum()"),
                  limits=FormLimits(steps=500))


def test_a_backtracking_validator_ends_in_a_limit_error_within_the_regex_timeout():
    started = time.monotonic()
    with pytest.raises(FormLimitError) as caught:
        translate(definition(regexp=ALTERNATIVES), ANSWER)
    assert time.monotonic() - started < WITHIN_SECONDS
    assert "f.x: regexpValidator '^(a|a)*$'" in str(caught.value)
    assert "ran longer than" in str(caught.value)


def test_the_nested_plus_validator_is_answered_at_once_by_the_regex_engine():
    started = time.monotonic()
    with pytest.raises(dynamic_ui.UiError, match="f.x: Enter a valid value"):
        translate(definition(regexp=NESTED_PLUS), ANSWER)
    assert time.monotonic() - started < WITHIN_SECONDS


def test_yaql_regex_operators_are_timed_too():
    with pytest.raises(FormLimitError, match="ran longer than"):
        translate(definition(f"$.f.x =~ '{ALTERNATIVES}'"), ANSWER)
    assert translate(definition("$.f.x =~ regex('b.')"), "abc")["value"] is True
    assert translate(definition("regex('b').replace('abc', 'x')"))["value"] == "axc"


def test_ordinary_templates_are_untouched():
    model = translate(definition("range(1, 5).select($ * 2).toList()"))
    assert model["value"] == [2, 4, 6, 8]
    assert translate(definition("$.f.x + '!'"), "hi")["value"] == "hi!"


def test_a_set_stop_event_ends_a_running_evaluation():
    stop = threading.Event()
    outcome: list[BaseException] = []

    def evaluate() -> None:
        try:
            with spending(FormLimits(seconds=60).budget(), stop):
                dynamic_ui.translate(definition(NESTED), {"f": {"x": "x"}})
        except FormLimitError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=evaluate)
    thread.start()
    time.sleep(0.5)
    stopped = time.monotonic()
    stop.set()
    thread.join(timeout=10)
    assert not thread.is_alive() and time.monotonic() - stopped < 2
    assert "the server is stopping" in str(outcome[0])


def test_limits_come_from_the_configuration():
    limits = FormLimits.from_config({"engine": {"form_time_limit": 2.5, "form_step_limit": 0,
                                                "form_memory_limit": 100}})
    assert limits == FormLimits(2.5, None, 100)
    assert form_budget.FORM_ITERATOR_LIMIT < 2000  # smaller than a MuranoPL task's


#: ``murano-engine ARGS`` that writes its peak memory (kB) to the file named first: the
#: high-water mark of its own memory since exec (a child's ``ru_maxrss`` counts what it
#: inherited from the process that forked it: pytest's, grown by earlier tests)
PEAK_REPORTING_CLI = """
import atexit, re, runpy, sys
peak_file = sys.argv.pop(1)
def report():
    status = open("/proc/self/status").read()
    open(peak_file, "w").write(re.search(r"VmHWM:\\s*(\\d+)", status).group(1))
atexit.register(report)
sys.argv[0] = "murano-engine"
runpy.run_module("murano_engine.cli.main", run_name="__main__")
"""


@pytest.mark.parametrize(("template", "regexp", "says"), [
    (ENDLESS, None, "more than 1000 items"),
    (HUGE, None, "more than 1000 items"),
    ("$.f.x", ALTERNATIVES, "ran longer than"),
])
def test_ui_model_command_ends_hostile_definitions_cleanly(tmp_path: Path, template, regexp,
                                                           says):
    ui = tmp_path / "ui.yaml"
    ui.write_text(definition(template, regexp))
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"f": {"x": ANSWER}}))
    peak = tmp_path / "peak"
    started = time.monotonic()
    with open(tmp_path / "err", "w") as err:
        process = subprocess.Popen(
            [sys.executable, "-c", PEAK_REPORTING_CLI, str(peak), "ui-model", str(ui),
             str(answers)], stdout=subprocess.DEVNULL, stderr=err)
    timer = threading.Timer(WITHIN_SECONDS * 3, process.kill)
    timer.start()
    status = process.wait()
    timer.cancel()
    elapsed = time.monotonic() - started
    stderr = (tmp_path / "err").read_text()
    assert status == 1, stderr
    assert f"error: {ui} met a limit" in stderr and says in stderr
    assert elapsed < WITHIN_SECONDS + 5  # the interpreter's start included
    assert int(peak.read_text()) < WITHIN_MB * 1024
