"""A package author's typos are warned about: a model key no class declares, and calls
``validate`` can tell will never find what they call. Warnings, not errors: Murano
ignores the key and finds the call only when it runs, so its packages still validate."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from dsl_helpers import class_text, cli, write_package

from murano_engine.dsl.executor import Executor
from murano_engine.dsl.model import load_model
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.interpreter import build_interpreter

GREETER = class_text("t.typo", "Greeter", """
    Extends: Base
    Properties:
      greeting:
        Contract: $.string()
        Default: Hello
      helper:
        Contract: $.class(Greeter)
    Methods:
      .init:
        Arguments:
          - loud:
              Contract: $.bool()
              Default: false
        Body:
      hello:
        Body:
          - Return: $.greeting
      count:
        Usage: Static
        Body:
          - Return: 1
    """)
BASE = class_text("t.typo", "Base", """
    Properties:
      inherited:
        Contract: $
    Methods:
      .init:
        Arguments:
          - fromBase:
              Contract: $
        Body:
    """)
WORDS = class_text("t.typo", "Words", """
    Methods:
      exclaim:
        Usage: Extension
        Arguments:
          - text:
              Contract: $.string()
        Body:
          - Return: $text + '!'
      count:
        Usage: Static
        Body:
          - Return: 2
    """)
TYPOS = class_text("t.typos", "Typos", """
    Import: w:Words
    Properties:
      p:
        Contract: $
        Default: lenght([1])
    Methods:
      m:
        Body:
          - $x: formt('{0}', 1)
          - $y: $.helo()
          - $z: w:Words.cuont()
          - Return: [$x, $y, $z]
      fine:
        # every call here reaches something: no warning
        Arguments:
          - who:
              Contract: $.string()
              Default: format('{0}', world)
          - g:
              Contract: $.class(w:Greeter)
        Body:
          - $words: [$g.greeting, $who]
          - $shout: $words.select($.toUpper()).join(' ')
          - $g.helper?.hello()
          - $n: len($words) + w:Greeter.count() + w:Words.count() + :Typos.fine2()
          - $m: typeinfo($g).methods.where($.name = hello).first().invoke($g)
          - $s: $who.exclaim()
          - $t: new(w:Greeter).hello()
          - $l: list($words).where($ != null).select(str($))
          - Return: $who.trim() + $.m()
      fine2:
        Usage: Static
        Body:
    """, w="t.typo")


@pytest.fixture
def packages(tmp_path: Path) -> Path:
    write_package(tmp_path, "t.typo", {"Greeter": GREETER, "Base": BASE, "Words": WORDS})
    write_package(tmp_path, "t.typos", {"Typos": TYPOS}, require={"t.typo": "*"})
    return tmp_path


# -- validate ------------------------------------------------------------------------

def test_validate_warns_of_calls_that_cannot_succeed(packages: Path) -> None:
    """Those of method ``m`` and of the Default of ``p``; none of ``fine``'s calls."""
    done = cli("validate", str(packages / "t.typos"))
    assert done.returncode == 0, done.stdout + done.stderr  # warnings, not problems
    assert done.stdout.strip().endswith(": OK")
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: ")
                and "E020" not in line]
    where = str(packages / "t.typos" / "Classes" / "Typos.yaml")
    assert warnings == [
        f"warning: {where}:13:13: no function formt() exists: formt(...) cannot be called "
        "(did you mean format(), norm(), float()?)",
        f"warning: {where}:14:13: no class, extension or function has a method helo(): "
        ".helo(...) cannot be called (did you mean hello(), reload(), deploy()?)",
        f"warning: {where}:15:13: t.typo.Words has no method cuont() (did you mean count()?)",
        f"warning: {where}:9:14: no function lenght() exists: lenght(...) cannot be called "
        "(did you mean let(), len()?)",
    ], done.stderr


def test_a_method_only_yaql_function_called_as_a_function_is_warned_of(tmp_path: Path) -> None:
    """``toUpper`` is a method since Format 1.2: ``toUpper($x)`` fails there, not in 1.0."""
    cls = class_text("t.forms", "Forms", """
        Methods:
          m:
            Body:
              - Return: toUpper(abc)
        """)
    write_package(tmp_path / "new", "t.forms", {"Forms": cls})
    write_package(tmp_path / "old", "t.forms", {"Forms": cls}, fmt="1.0")
    new = cli("validate", str(tmp_path / "new" / "t.forms"))
    old = cli("validate", str(tmp_path / "old" / "t.forms"))
    assert new.returncode == old.returncode == 0
    assert "no function toUpper() exists" in new.stderr
    assert "toUpper" not in old.stderr


# -- model keys ------------------------------------------------------------------------

def _loader(packages: Path) -> PackageLoader:
    return PackageLoader([packages], build_interpreter())


def _greeter(object_id: str, **props: Any) -> dict[str, Any]:
    return {"?": {"type": "t.typo.Greeter", "id": object_id, "name": "g"}, **props}


def test_a_model_key_no_class_declares_is_warned_of(packages: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    """Once, naming the object, its class, the key and what the class takes; not the
    declared properties (its parents' too), the .init arguments (any class's), the
    header, nor an object only the previous model (ObjectsCopy) has."""
    model = {"Objects": _greeter("g1", greting="Hi", greeting="Hi", inherited=1, loud=True,
                                 fromBase=2, helper=_greeter("g2", loud=True)),
             "ObjectsCopy": _greeter("g1", greting="Hi", helper=_greeter("g3", greting=1))}
    with caplog.at_level(logging.WARNING, logger="murano_engine.dsl.model"):
        root = load_model(Executor(_loader(packages)), model)
    assert root is not None
    assert [r.getMessage() for r in caplog.records] == [
        "object g1 of class t.typo.Greeter: the model sets 'greting', which neither "
        "t.typo.Greeter nor its parents declare (ignored); its properties and .init "
        "arguments: fromBase, greeting, helper, inherited, loud"]


def test_a_deployment_reports_the_warning(packages: Path) -> None:
    reports: list[dict[str, Any]] = []
    executor = Executor(_loader(packages),
                        services={"reporter": reports.append, "environment_id": "env1"})
    load_model(executor, {"Objects": _greeter("g1", greting="Hi")})
    (report,) = reports
    assert report["level"] == "warning" and report["id"] == "g1"
    assert report["environment_id"] == "env1" and "'greting'" in report["text"]


def test_run_prints_the_warning(packages: Path, tmp_path: Path) -> None:
    (tmp_path / "model.json").write_text(json.dumps({"Objects": _greeter("g1", greting="Hi")}))
    done = cli("run", "t.typo.Greeter.count", "--model", str(tmp_path / "model.json"),
               "-l", str(packages))
    assert done.returncode == 0, done.stderr
    assert ("WARNING murano_engine.dsl.model: object g1 of class t.typo.Greeter: the model "
            "sets 'greting'") in done.stderr
