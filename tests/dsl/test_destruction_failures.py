"""A ``.destroy`` that fails is logged in one line naming the class and the error (its
Python traceback only at debug level), and destruction goes on."""

from __future__ import annotations

import logging
from pathlib import Path

from dsl_helpers import class_text, write_package

from murano_engine.dsl import collector
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.interpreter import build_interpreter


def test_a_failing_destroy_is_one_line_and_the_others_still_run(tmp_path: Path, caplog) -> None:
    write_package(tmp_path, "t.gone", {
        "Bad": class_text("t.gone", "Bad", """
            Methods:
              .destroy:
                Body:
                  - Throw: BadThing
                    Message: cannot go
        """),
        "Good": class_text("t.gone", "Good", """
            Properties:
              done:
                Contract: $.bool()
                Usage: Out
                Default: false
            Methods:
              .destroy:
                Body:
                  - $.done: true
        """),
    })
    loader = PackageLoader([tmp_path], build_interpreter())
    executor = Executor(loader)
    bad = executor.new_object(loader.find_class("t.gone.Bad"))
    good = executor.new_object(loader.find_class("t.gone.Good"))
    with caplog.at_level(logging.DEBUG, logger="murano_engine.dsl.collector"):
        collector.destroy(executor, [bad, good])
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is None
    assert "t.gone.Bad.destroy of" in errors[0].getMessage()
    assert "cannot go" in errors[0].getMessage()
    assert [r.exc_info is not None for r in caplog.records if r.levelno == logging.DEBUG] == [True]
    assert good.destroyed and bad.destroyed
