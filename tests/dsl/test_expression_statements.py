"""An expression used as a statement runs all the way, as in Murano.

Murano's yaql turns a statement's lazy result into a list, so
``- $servers.select($.deploy())`` deploys every server; packages (and the core
library, e.g. ``Instance`` attaching its volumes) rely on it.
"""

from __future__ import annotations

import pytest

from tests.dsl.dsl_helpers import class_text, run_method, write_package

BODY = """
Properties:
  seen:
    Contract: [$]
    Default: []
    Usage: InOut
Methods:
  note:
    Arguments:
      - item:
          Contract: $
    Body:
      - $this.seen: $this.seen + list($item)
      - Return: $item
  run:
    Body:
      - {statement}
      - Return: $this.seen
"""


@pytest.mark.parametrize(("statement", "expected"), [
    ("range(3).select($this.note($))", (0, 1, 2)),
    ("list(a, b).where($this.note($) = a)", ("a", "b")),
    ("dict(x => 1, y => 2).items().select($this.note($[0]))", ("x", "y")),
    ("range(2).select(range(2).select($this.note($)))", (0, 1, 0, 1)),
])
def test_a_lazy_statement_runs_every_step(tmp_path, statement, expected):
    text = class_text("t.stmt", "S", BODY.replace("{statement}", statement))
    write_package(tmp_path, "t.stmt", {"S": text})
    assert run_method([tmp_path], "t.stmt.S.run") == expected
