"""``Catch: With:`` takes exception names, as in Murano: ``ns:Name`` is resolved
through the class's namespaces and needs no class of that name."""

from __future__ import annotations

import pytest

from tests.dsl.dsl_helpers import class_text, run_method, write_package

BODY = """
Methods:
  run:
    Body:
      - Try:
          - Throw: {thrown}
            Message: boom
        Catch:
          - With: {caught}
            Do:
              - Return: caught
      - Return: not reached
"""


@pytest.mark.parametrize(("thrown", "caught"), [
    ("errs:Failure", "errs:Failure"),
    ("errs:Failure", "t.errors.Failure"),
    ("Local", "Local"),
    ("Local", ":Local"),
    ("errs:Failure", "[other:Nothing, errs:Failure]"),
])
def test_names_in_with_are_names(tmp_path, thrown, caught):
    body = BODY.replace("{thrown}", thrown).replace("{caught}", caught)
    text = class_text("t.catch", "C", body, errs="t.errors", other="t.other")
    write_package(tmp_path, "t.catch", {"C": text})
    assert run_method([tmp_path], "t.catch.C.run") == "caught"


def test_a_name_that_does_not_match_lets_the_exception_through(tmp_path):
    body = BODY.replace("{thrown}", "errs:Failure").replace("{caught}", "other:Failure")
    text = class_text("t.catch", "C", body, errs="t.errors", other="t.other")
    write_package(tmp_path, "t.catch", {"C": text})
    with pytest.raises(Exception, match="boom"):
        run_method([tmp_path], "t.catch.C.run")
