"""io.murano.system.Logger: MuranoPL log calls reach Python logging, formatted safely."""

from __future__ import annotations

import logging
import textwrap

from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.interpreter import build_interpreter

CLASS = """
Name: t.log.L
Methods:
  run:
    Body:
      - $log: logger(demo)
      - $log.info('hello {0} {x}', 1, x => 2)
      - $log.debug('below the level')
      - $log.error('bad {0}', 3)
      - $log.warning('unformattable {0.__class__}', 4)
"""


def test_levels_and_formatting(tmp_path, caplog):
    package = tmp_path / "p"
    (package / "Classes").mkdir(parents=True)
    (package / "manifest.yaml").write_text(
        "Format: 1.4\nType: Library\nFullName: t.log\nClasses:\n  t.log.L: L.yaml\n")
    (package / "Classes" / "L.yaml").write_text(textwrap.dedent(CLASS))
    loader = PackageLoader([tmp_path], build_interpreter())
    executor = Executor(loader)
    with caplog.at_level(logging.INFO, logger="murano.app.demo"):
        executor.call(executor.new_object(loader.find_class("t.log.L")), "run")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO, "hello 1 2"),
        (logging.ERROR, "bad 3"),
        (logging.WARNING, "unformattable {0.__class__}"),
    ]
