"""``murano-engine`` as a subprocess: results, arguments, models and one clear error."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from dsl_helpers import class_text, cli, write_package

APP = class_text("t.cli", "App", """
    Properties:
      size:
        Contract: $.int().notNull()
        Default: 1
      config:
        Contract:
          port: $.int().notNull()
          hosts: [$.string()]
        Default: {port: 80, hosts: []}
    Methods:
      hello:
        Arguments:
          - name:
              Contract: $.string().notNull()
              Default: world
          - tags:
              Contract: [$.string()]
              Default: []
        Body:
          - Return:
              greeting: format('hello {0}', $name)
              tags: $tags
              size: $.size
      describe:
        Body:
          - Return: [$.size, $.config.port, $.config.hosts]
      badPrefix:
        Body:
          - Return: new(nope:Thing)
      unknownClass:
        Body:
          - Return: new('t.cli.Missing')
      violate:
        Body:
          - Return: new(App, config => {port => 'http', hosts => []})
      violateDeep:
        Body:
          - Return: new(App, config => {port => 1, hosts => [a, [b]]})
      recurse:
        Arguments:
          - n:
              Contract: $.int().notNull()
        Body:
          - If: $n > 0
            Then:
              - Return: $.recurse($n - 1) + 1
          - Return: 0
      forever:
        Body:
          - $i: 0
          - While: $i >= 0
            Do:
              - $i: $i + 1
      throwIt:
        Body:
          - $.inner()
      inner:
        Body:
          - Throw: t.cli.Boom
            Message: it went boom
      pyError:
        Body:
          - Return: 1 / 0
""")

BROKEN = class_text("t.broken", "Broken", """
    Methods:
      run:
        Body:
          - Return: [1,
""")


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli")
    write_package(root, "t.cli", {"App": APP})
    write_package(root / "broken", "t.broken", {"Broken": BROKEN})
    return root


def line_of(needle: str) -> int:
    """The 1-based line of APP holding ``needle``."""
    return next(n for n, line in enumerate(APP.splitlines(), 1) if needle in line)


def run(packages: Path, *args: str) -> tuple[int, str, str]:
    done = cli("run", "-l", str(packages), *args)
    return done.returncode, done.stdout, done.stderr


def assert_clear_error(code: int, out: str, err: str) -> str:
    assert code == 1
    assert out == ""
    assert err.startswith("error: ")
    assert "Traceback" not in err
    assert err.count("error: ") == 1
    return err


def test_run_prints_the_result_as_json(packages: Path) -> None:
    code, out, err = run(packages, "t.cli.App.hello")
    assert (code, err) == (0, "")
    assert json.loads(out) == {"greeting": "hello world", "tags": [], "size": 1}


def test_run_passes_json_arguments(packages: Path) -> None:
    code, out, err = run(packages, "t.cli.App.hello", "--arg", 'name="bob"',
                         "--arg", 'tags=["a", "b"]')
    assert (code, err) == (0, "")
    assert json.loads(out) == {"greeting": "hello bob", "tags": ["a", "b"], "size": 1}


def test_an_argument_that_is_not_json_is_a_string(packages: Path) -> None:
    code, out, _ = run(packages, "t.cli.App.hello", "--arg", "name=alice")
    assert code == 0 and json.loads(out)["greeting"] == "hello alice"


def test_run_on_a_model(packages: Path, tmp_path: Path) -> None:
    root = {"?": {"id": "a" * 32, "type": "t.cli.App"},
            "size": 7, "config": {"port": 8080, "hosts": ["h1"]}}
    for model in ({"Objects": root}, root):  # a whole model, or its root object as deploy takes
        (tmp_path / "model.json").write_text(json.dumps(model))
        code, out, err = run(packages, "t.cli.App.describe", "--model",
                             str(tmp_path / "model.json"))
        assert (code, err) == (0, "")
        assert json.loads(out) == [7, 8080, ["h1"]]


def test_a_model_contract_violation_names_the_property(packages: Path, tmp_path: Path) -> None:
    model = {"Objects": {"?": {"id": "b" * 32, "type": "t.cli.App"}, "size": "big"}}
    (tmp_path / "model.json").write_text(json.dumps(model))
    err = assert_clear_error(*run(packages, "t.cli.App.describe", "--model",
                                  str(tmp_path / "model.json")))
    assert "ContractViolationException" in err
    assert "t.cli.App.size" in err and "'big'" in err
    app_file = packages / "t.cli" / "Classes" / "App.yaml"
    # A model that fails to load names the declaration (its Contract) that refused it.
    assert err.splitlines()[1:] == [
        "MuranoPL stack (most recent call last):",
        f"  t.cli t.cli.App.size (property contract) at {app_file}:{line_of('size:') + 1}:5"]


def test_an_argument_contract_violation(packages: Path) -> None:
    err = assert_clear_error(*run(packages, "t.cli.App.hello", "--arg", "tags=[1, [2]]"))
    assert "ContractViolationException" in err
    assert "tags" in err


def test_a_contract_violation_names_the_property_path(packages: Path) -> None:
    err = assert_clear_error(*run(packages, "t.cli.App.violate"))
    assert "murano.dsl.exceptions.ContractViolationException" in err
    assert "[t.cli.App.config[port]] value 'http' is not an integer" in err
    assert "MuranoPL stack (most recent call last):" in err
    app_file = packages / "t.cli" / "Classes" / "App.yaml"
    stack = err.splitlines()[2:]
    assert stack == [
        f"  t.cli t.cli.App.violate at {app_file}:{line_of('new(App, config => {port => ')}:9",
        f"  t.cli t.cli.App.config (property contract) at {app_file}:{line_of('config:') + 1}:5"]
    err = assert_clear_error(*run(packages, "t.cli.App.violateDeep"))
    assert "t.cli.App.config[hosts][1]" in err


def test_errors_show_the_murano_stack_with_positions(packages: Path) -> None:
    err = assert_clear_error(*run(packages, "t.cli.App.throwIt"))
    lines = err.splitlines()
    assert lines[0] == "error: t.cli.Boom: it went boom"
    assert lines[1] == "MuranoPL stack (most recent call last):"
    app_file = packages / "t.cli" / "Classes" / "App.yaml"
    assert lines[2] == f"  t.cli t.cli.App.throwIt at {app_file}:{line_of('$.inner()')}:9"
    assert lines[3] == f"  t.cli t.cli.App.inner at {app_file}:{line_of('Throw:')}:9"
    assert len(lines) == 4


def test_a_python_error_in_murano_code_is_one_clear_error(packages: Path) -> None:
    err = assert_clear_error(*run(packages, "t.cli.App.pyError"))
    assert err.startswith("error: ZeroDivisionError: ")
    assert "t.cli.App.pyError at " in err


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_adds_the_python_traceback(packages: Path, where: str) -> None:
    command = ["run", "-l", str(packages), "t.cli.App.pyError"]
    done = cli(*(["--debug", *command] if where == "before" else [*command, "--debug"]))
    assert done.returncode == 1
    assert done.stderr.startswith("error: ZeroDivisionError")
    assert "Traceback (most recent call last):" in done.stderr


def test_without_debug_no_python_traceback(packages: Path) -> None:
    done = cli("run", "-l", str(packages), "t.cli.App.pyError")
    assert done.returncode == 1 and "Traceback" not in done.stderr


def test_version() -> None:
    done = cli("--version")
    assert done.returncode == 0
    # what setup.py installed under: the two cannot drift apart
    assert done.stdout == f"murano-engine {importlib.metadata.version('murano-engine')}\n"
    assert re.fullmatch(r"murano-engine \d+\.\d+\.\d+\n", done.stdout)


def test_an_unknown_class(packages: Path) -> None:
    err = assert_clear_error(*run(packages, "t.cli.Nope.run"))
    assert "NoClassFound" in err and "t.cli.Nope" in err


def test_an_unknown_class_used_by_code(packages: Path) -> None:
    err = assert_clear_error(*run(packages, "t.cli.App.unknownClass"))
    assert "NoClassFound" in err and "t.cli.Missing" in err
    assert "t.cli.App.unknownClass at " in err


def test_an_unknown_method(packages: Path) -> None:
    err = assert_clear_error(*run(packages, "t.cli.App.nope"))
    assert "NoMethodFound" in err and "'nope'" in err


def test_an_unknown_namespace_prefix(packages: Path) -> None:
    err = assert_clear_error(*run(packages, "t.cli.App.badPrefix"))
    assert "unknown namespace prefix 'nope'" in err
    app_file = packages / "t.cli" / "Classes" / "App.yaml"
    assert f"t.cli.App.badPrefix at {app_file}:{line_of('nope:Thing')}:9" in err


def test_malformed_yaml_names_file_and_line(packages: Path) -> None:
    err = assert_clear_error(*run(packages / "broken", "t.broken.Broken.run"))
    broken = packages / "broken" / "t.broken" / "Classes" / "Broken.yaml"
    assert err.startswith(f"error: {broken}:{len(BROKEN.splitlines()) + 1}:1: malformed YAML")


def test_an_invalid_manifest_is_a_warning_and_its_classes_are_unknown(tmp_path: Path) -> None:
    write_package(tmp_path, "t.m", manifest="FullName: t.m\nFormat: 2.0\n")
    done = cli("run", "-l", str(tmp_path), "t.m.A.run")
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0].startswith("warning: ") and "manifest.yaml" in lines[0]
    assert "unsupported MuranoPL format 2.0" in lines[0]
    assert lines[1].startswith("error: ") and "t.m.A" in lines[1]
    assert "Traceback" not in done.stderr


def test_a_missing_package_folder(tmp_path: Path) -> None:
    for args in (["-l", str(tmp_path), "-l", str(tmp_path / "nope"), "t.x.A.run"],
                 ["t.x.A.run", "-l", str(tmp_path / "nope")]):
        done = cli("run", *args)
        assert done.returncode == 1
        assert done.stderr == f"error: {tmp_path / 'nope'}: package folder does not exist\n"


def test_runaway_recursion_is_a_call_depth_error(packages: Path) -> None:
    err = assert_clear_error(*run(packages, "t.cli.App.recurse", "--arg", "n=100000"))
    assert err.startswith("error: murano.dsl.exceptions.CallDepthExceededError: ")
    assert "RecursionError" not in err
    assert "t.cli.App.recurse at " in err
    assert "[previous frame repeated" in err
    assert len(err.splitlines()) < 20


@pytest.mark.parametrize("depth", [500, 1500])
def test_legitimate_deep_recursion_works(packages: Path, depth: int) -> None:
    code, out, err = run(packages, "t.cli.App.recurse", "--arg", f"n={depth}")
    assert (code, err) == (0, "")
    assert json.loads(out) == depth


def test_validate_ok(packages: Path) -> None:
    done = cli("validate", str(packages / "t.cli"))
    assert done.returncode == 0
    assert done.stdout.strip() == f"{packages / 't.cli'}: OK"


def test_target_must_be_class_dot_method(packages: Path) -> None:
    done = cli("run", "-l", str(packages), "justaword")
    assert done.returncode != 0
    assert "CLASS.METHOD" in done.stderr
    assert "Traceback" not in done.stderr


def test_usage_shows_required_words_and_a_mistyped_folder_is_named(tmp_path: Path) -> None:
    assert cli("deploy", "--help").stdout.startswith(
        "usage: murano-engine deploy MODEL [-l DIR ...]")
    assert "OBJECT_ID METHOD" in cli("action", "--help").stdout
    (tmp_path / "m.json").write_text("{}")
    for args in (["deploy", "m.json", "-l", "dsl_pakages"],
                 ["deploy", "-l", "dsl_pakages", "m.json"],
                 ["validate", "pkg", "-l", "dsl_pakages"]):
        done = cli(*args, cwd=tmp_path)
        assert done.returncode == 1
        assert done.stderr == "error: dsl_pakages: package folder does not exist\n", args


def _ended(code: str) -> subprocess.CompletedProcess:
    """A process whose last act is ``exit_now`` (as every command's), after ``code``."""
    return subprocess.run(
        [sys.executable, "-c", f"from murano_engine.cli.main import exit_now\n{code}"],
        capture_output=True, text=True, timeout=60)


def test_a_command_ends_with_its_atexit_handlers_run_and_its_output_whole() -> None:
    done = _ended("import atexit\n"
                  "atexit.register(lambda: print('handler ran'))\n"
                  "print('x' * 200_000, end='')\n"
                  "exit_now(3)")
    assert done.returncode == 3
    assert done.stdout == "x" * 200_000 + "handler ran\n"


def test_a_command_leaving_a_thread_running_waits_for_it() -> None:
    done = _ended("import threading, time\n"
                  "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done'))"
                  ").start()\n"
                  "exit_now(4)")
    assert (done.returncode, done.stdout) == (4, "thread done\n")


def test_a_run_piped_through_a_reader_gets_all_of_its_result(tmp_path: Path) -> None:
    write_package(tmp_path, "t.big", {"Big": class_text("t.big", "Big", f"""
    Methods:
      many:
        Body:
          - Return: range(1999).select(concat('item-', str($), '-{"x" * 100}'))
    """)})
    done = cli("run", "-l", str(tmp_path), "t.big.Big.many")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[-1] == "item-1998-" + "x" * 100


def test_a_break_outside_a_loop_is_shown_at_its_line(tmp_path: Path) -> None:
    folder = write_package(tmp_path, "t.brk", {"App": class_text("t.brk", "App", """
        Methods:
          run:
            Body:
              - $x: 1
              - If: $x > 0
                Then:
                  - Continue:
              - Return: $x
    """)})
    done = cli("run", "-l", str(tmp_path), "t.brk.App.run")
    assert done.returncode == 1
    app_file = folder / "Classes" / "App.yaml"
    assert done.stderr.splitlines() == [
        "error: murano.dsl.exceptions.DslInvalidOperationError: Break and Continue cannot be "
        "used on method level",
        "MuranoPL stack (most recent call last):",
        f"  t.brk t.brk.App.run at {app_file}:10:13"]  # the Continue


def test_run_writes_a_yaml_timestamp_as_text(tmp_path: Path) -> None:
    """A YAML timestamp is a datetime, which json could not write: the result was a
    Python TypeError and no file or line."""
    write_package(tmp_path, "t.when", {"C": class_text("t.when", "C", """
        Methods:
          m:
            Usage: Static
            Body:
              - Return: [2001-12-14t21:59:43.10-05:00]
        """)})
    done = cli("run", "-l", str(tmp_path), "t.when.C.m")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["2001-12-14 21:59:43.100000-05:00"]
