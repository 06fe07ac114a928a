"""Mutated packages and models through ``validate`` and ``run``: a clean error or success.

Truncated files, flipped bytes and values of the wrong type (``Usage: [list]``,
``Namespaces: 7`` ...) must end in a LoadError, a DslError or a MuranoPL
exception whose message names the file, never in another Python exception.
The generator is seeded, so a failure reproduces.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from dsl_helpers import class_text, write_package

from murano_engine.cli import main as cli
from murano_engine.dsl import errors
from murano_engine.dsl.validation import validate_package
from murano_engine.engine.interpreter import build_interpreter

SEED = 11
CASES = 300
CLEAN = (errors.LoadError, errors.DslError, errors.MuranoPlException)

APP = class_text("t.fz", "App", """
    Extends: Base
    Properties:
      size:
        Contract: $.int().notNull()
        Default: 1
      config:
        Contract:
          port: $.int().notNull()
          hosts: [$.string()]
        Default: {port: 80, hosts: []}
        Usage: InOut
    Methods:
      run:
        Arguments:
          - name:
              Contract: $.string().notNull()
              Default: world
        Body:
          - $data: new('io.murano.system.Resources').json('data.json')
          - $more: new('io.murano.system.Resources').yaml('data.yaml')
          - For: h
            In: $.config.hosts
            Do:
              - $name: $name + $h
          - Return:
              - format('hi {0}', $name)
              - $.size
              - $data.a
              - $more.b
              - $.twice(2)
      twice:
        Usage: Static
        Arguments:
          n:
            Contract: $.int()
        Body:
          - Return: $n * 2
""")
BASE = class_text("t.fz", "Base", """
    Properties:
      label:
        Contract: $.string()
        Default: base
    Methods:
      describe:
        Body:
          - Return: $.label
""")
MANIFEST = {"Format": "1.4", "Type": "Application", "FullName": "t.fz", "Name": "Fuzz",
            "Version": "1.0.0", "Tags": ["a"], "Require": {"io.murano": ""},
            "Classes": {"t.fz.App": "App.yaml", "t.fz.Base": "Base.yaml"}}
MODEL = {"Objects": {"?": {"id": "a" * 32, "type": "t.fz.App"}, "size": 3,
                     "config": {"port": 8080, "hosts": ["x", "y"]}, "label": "l"}}
RESOURCES = {"data.json": '{"a": [1, 2, {"b": null}]}', "data.yaml": "b: {c: [1, 2]}\n"}
WRONG_VALUES: list[Any] = [[1, "x"], 7, {"k": "v"}, None, "word", True, 2.5, "$x +", [], {}]


def write(root: Path, app: str = APP, base: str = BASE, manifest: str | None = None,
          model: str | None = None, resources: dict[str, str] | None = None) -> Path:
    """The package and ``model.json`` under ``root``; lone surrogates become raw bytes."""
    package = write_package(root, "t.fz")
    files = {package / "Classes" / "App.yaml": app, package / "Classes" / "Base.yaml": base,
             package / "manifest.yaml": manifest or yaml.safe_dump(MANIFEST),
             root / "model.json": model or json.dumps(MODEL)}
    (package / "Resources").mkdir()
    files.update({package / "Resources" / name: text
                  for name, text in (resources or RESOURCES).items()})
    for path, text in files.items():
        path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
    return package


def truncate(text: str, rng: random.Random) -> str:
    return text[:rng.randrange(len(text))]


def flip(text: str, rng: random.Random) -> str:
    data = bytearray(text.encode())
    for _ in range(rng.randint(1, 4)):
        data[rng.randrange(len(data))] = rng.choice(b"[]{}:-&*!|>'\"#%@`\n \t\x00\xff,?$")
    return data.decode("utf-8", errors="surrogateescape") if rng.random() < 0.5 else \
        data.decode("latin-1")


def retype(document: Any, rng: random.Random) -> Any:
    """``document`` with one value somewhere replaced by a value of another type."""
    paths: list[list[Any]] = []

    def collect(value: Any, path: list[Any]) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                paths.append(path + [key])
                collect(item, path + [key])
        elif isinstance(value, list):
            for index, item in enumerate(value):
                collect(item, path + [index])

    collect(document, [])
    path = rng.choice(paths)
    target = document
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = rng.choice(WRONG_VALUES)
    return document


def mutate_yaml(text: str, rng: random.Random) -> str:
    kind = rng.choice(("truncate", "flip", "retype", "retype"))
    if kind == "truncate":
        return truncate(text, rng)
    if kind == "flip":
        return flip(text, rng)
    return yaml.safe_dump(retype(yaml.safe_load(text), rng))


def mutate_json(text: str, rng: random.Random) -> str:
    kind = rng.choice(("truncate", "flip", "retype"))
    if kind == "truncate":
        return truncate(text, rng)
    if kind == "flip":
        return flip(text, rng)
    return json.dumps(retype(json.loads(text), rng))


def variants() -> list[tuple[str, Callable[[Path], Path]]]:
    rng = random.Random(SEED)
    made: list[tuple[str, Callable[[Path], Path]]] = []
    for number in range(CASES):
        target = rng.choice(("app", "app", "app", "base", "manifest", "manifest", "model",
                             "resource"))
        seed = rng.randrange(2 ** 32)

        def build(root: Path, target: str = target, seed: int = seed) -> Path:
            case = random.Random(seed)
            if target == "app":
                return write(root, app=mutate_yaml(APP, case))
            if target == "base":
                return write(root, base=mutate_yaml(BASE, case))
            if target == "manifest":
                return write(root, manifest=mutate_yaml(yaml.safe_dump(MANIFEST), case))
            if target == "model":
                return write(root, model=mutate_json(json.dumps(MODEL), case))
            name = case.choice(sorted(RESOURCES))
            mutate = mutate_json if name.endswith(".json") else mutate_yaml
            return write(root, resources={**RESOURCES, name: mutate(RESOURCES[name], case)})

        made.append((f"{number}-{target}", build))
    return made


def run_path(root: Path, with_model: bool) -> None:
    """``murano-engine run -l ROOT t.fz.App.run [--model ROOT/model.json]``, in-process."""
    options = argparse.Namespace(load_packages_from=[str(root)], target="t.fz.App.run",
                                 model=str(root / "model.json") if with_model else None,
                                 arg=[])
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        cli._run(options)


def assert_clean(exc: BaseException, root: Path) -> None:
    """A LoadError names the file; a DslError or MuranoPL exception is the interpreter's
    own; any other error comes from running code and carries its MuranoPL stack."""
    text = cli.describe_error(exc)
    first = text.splitlines()[0]
    assert first.startswith("error: ") and "Traceback" not in text
    if isinstance(exc, errors.LoadError):
        assert str(root) in first, text
    elif not isinstance(exc, CLEAN):
        assert errors.stack_of(exc) and str(root) in text, f"{type(exc).__name__}: {exc}"


def test_the_unmutated_package_validates_and_runs(tmp_path: Path) -> None:
    package = write(tmp_path)
    assert validate_package(package, build_interpreter(), [tmp_path]) == []
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert cli._run(argparse.Namespace(load_packages_from=[str(tmp_path)],
                                           target="t.fz.App.run",
                                           model=str(tmp_path / "model.json"), arg=[])) == 0
    assert json.loads(out.getvalue()) == ["hi worldxy", 3, [1, 2, {"b": None}], {"c": [1, 2]}, 4]


def test_mutated_packages_and_models_end_in_clean_errors(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    interpreter = build_interpreter()
    outcomes = {"ok": 0, "error": 0}
    for name, build in variants():
        root = tmp_path_factory.mktemp(name)
        package = build(root)
        try:
            problems = validate_package(package, interpreter, [root])
        except Exception as exc:  # noqa: BLE001 - any exception here is the finding
            pytest.fail(f"{name}: validate raised {type(exc).__name__}: {exc}")
        for problem in problems:
            assert str(root) in problem and "\n" not in problem, (name, problem)
        for with_model in (False, True):
            try:
                run_path(root, with_model)
                outcomes["ok"] += 1
            except Exception as exc:  # noqa: BLE001 - classified by assert_clean
                outcomes["error"] += 1
                try:
                    assert_clean(exc, root)
                except AssertionError as failure:
                    raise AssertionError(f"{name} (model={with_model}): {failure}") from exc
    assert outcomes["ok"] and outcomes["error"]


@pytest.mark.parametrize(("old", "new", "message"), [
    ("  twice:\n    Usage: Static", "  twice:\n    Usage: [Static]",
     "method 'twice': unknown Usage ['Static']"),
    ("Namespaces:\n  =: t.fz\n", "Namespaces: 7\n",
     "Namespaces must be a mapping of prefixes to namespaces"),
    ("    Usage: InOut", "    Usage: {In: Out}", "property 'config': unknown Usage"),
], ids=["method-usage-list", "namespaces-int", "property-usage-dict"])
def test_wrong_types_are_load_errors_naming_the_file(tmp_path: Path, old: str, new: str,
                                                     message: str) -> None:
    assert old in APP
    package = write(tmp_path, app=APP.replace(old, new))
    where = str(package / "Classes" / "App.yaml")
    (problem,) = validate_package(package, build_interpreter(), [tmp_path])
    assert problem.startswith(where) and message in problem
    with pytest.raises(errors.LoadError) as caught:
        run_path(tmp_path, with_model=False)
    assert str(caught.value) == problem
