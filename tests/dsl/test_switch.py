"""``switch(condition => value, ...)``: the first true condition's value, else null.

As in Murano (yaql's ``switch``): conditions are tried in order and only up to
the first true one; only that pair's value is evaluated; a condition is true
by Python truthiness; with no true condition (or no pairs) the result is null.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.dsl.dsl_helpers import class_text, run_method, write_package

FORMATS = ["1.2", "1.3", "1.4"]

CLASS = """
Properties:
  trail:
    Contract: [$.string()]
    Default: []
    Usage: InOut
Methods:
  mark:
    Arguments:
      - label:
          Contract: $.string()
      - result:
          Contract: $
    Body:
      - $this.trail: $this.trail + list($label)
      - Return: $result
  boom:
    Body:
      - Throw: Evaluated
        Message: this must not be evaluated
"""


def _run(tmp_path: Path, fmt: str, expression: str):
    """The value of ``expression`` in a method where $x is 3 and $none is null."""
    body = CLASS + ("  check:\n    Body:\n      - $x: 3\n      - $none: null\n"
                    f"      - Return: {expression}\n")
    write_package(tmp_path, "t.switch", {"S": class_text("t.switch", "S", body)}, fmt=fmt)
    return run_method([tmp_path], "t.switch.S.check")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("expression", "expected"), [
    ("switch(true => a)", "a"),
    ("switch($x < 2 => small, $x < 5 => medium, true => large)", "medium"),
    ("switch($x > 2 => first, $x > 1 => second)", "first"),
    ("switch($x > 5 => big)", None),
    ("switch(false => a, null => b)", None),
    ("switch()", None),
    ("switch(0 => zero, '' => empty, [] => nothing, 'text' => text)", "text"),
    ("switch([1] => list, true => other)", "list"),
    ("list(1, 2, 3).select(switch($ = 1 => one, $ = 2 => two, true => many))",
     ("one", "two", "many")),
    ("list(1, 2, 3, 4).pselect(switch($ mod 2 = 0 => $)).where($ != null)", (2, 4)),
    ("switch(true => dict(a => $x))", {"a": 3}),
])
def test_first_true_condition_wins(tmp_path, fmt, expression, expected):
    assert _run(tmp_path, fmt, expression) == expected


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("expression", [
    "switch(false => $this.boom(), true => ok)",          # a false pair's value
    "switch(true => ok, $this.boom() => never)",           # a condition after the first true one
    "switch($none != null => $none.name, true => ok)",     # the guard idiom
    "switch(false => a, true => ok, true => $this.boom())",
])
def test_only_what_is_needed_is_evaluated(tmp_path, fmt, expression):
    assert _run(tmp_path, fmt, expression) == "ok"


@pytest.mark.parametrize("fmt", FORMATS)
def test_conditions_run_in_order_up_to_the_first_true_one(tmp_path, fmt):
    expression = ("list(switch($this.mark(c1, false) => v1, "
                  "$this.mark(c2, 1) => $this.mark(v2, two), "
                  "$this.mark(c3, true) => v3), $this.trail)")
    assert _run(tmp_path, fmt, expression) == ("two", ("c1", "c2", "v2"))


def test_a_failing_condition_is_an_error(tmp_path):
    with pytest.raises(Exception, match="must not be evaluated"):
        _run(tmp_path, "1.4", "switch($this.boom() => a, true => b)")
