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

from murano_engine.dsl import executor

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


@pytest.mark.parametrize("depth", [500, executor.MAX_CALL_DEPTH - 1])
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


def test_a_native_methods_frame_says_native_not_the_class_files_first_line(
        tmp_path: Path) -> None:
    """A method only the Python half has (HeatStack.push, GC.subscribeDestruction) is
    written nowhere: its frame ended the stack as ``at .../GC.yaml:1:1``."""
    folder = write_package(tmp_path, "t.nat", {"C": class_text("t.nat", "C", """
        Methods:
          m:
            Body:
              - sys:GC.subscribeDestruction($this, $this, nothingSuch)
        """, sys="io.murano.system")})
    done = cli("run", "-l", str(tmp_path), "t.nat.C.m")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-2:] == [
        f"  t.nat t.nat.C.m at {folder / 'Classes' / 'C.yaml'}:8:9",
        "  io.murano io.murano.system.GC.subscribeDestruction at <native>"]


def test_the_test_runner_names_the_tests_a_misspelled_one_could_be(tmp_path: Path) -> None:
    write_package(tmp_path, "t.tests", {"Checks": class_text("t.tests", "Checks", """
        Extends: test:TestFixture
        Methods:
          testAdds:
            Body:
              - $.assertEqual(2, 1 + 1)
          testJoins:
            Body:
              - $.assertEqual('ab', a + b)
        """, test="io.murano.test")})

    def runner(*tests: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "murano_engine.cli.test_runner",
                               "t.tests", *tests, "-l", str(tmp_path)],
                              capture_output=True, text=True, timeout=60)

    misspelled = runner("Checks.testAdds", "testJion")  # one right, one wrong: none run
    assert (misspelled.returncode, misspelled.stdout) == (2, "")
    assert misspelled.stderr == (
        "error: t.tests has no test or test class testJion (did you mean testJoins?); its "
        "tests: Checks.testAdds, Checks.testJoins\n")
    one = runner("Checks.testAdds")
    assert one.returncode == 0, one.stderr
    assert one.stdout.splitlines()[0] == "About to execute 1 test"
    assert re.fullmatch(r"Executed 1 test in [\d.]+ seconds", one.stdout.splitlines()[-2])
    assert re.search(r"^Executed 2 tests in ", runner().stdout, re.MULTILINE)


DEPLOYED = {
    "Env": class_text("t.dep", "Env", """
        Properties:
          applications:
            Contract: [$.class(App).notNull()]
        Methods:
          deploy:
            Scope: Public
            Body:
              - For: app
                In: $.applications
                Do:
                  - $app.deploy()
        """),
    "App": class_text("t.dep", "App", """
        Properties:
          fail:
            Contract: $.bool()
            Default: false
          port:
            Contract: $.int()
            Usage: Out
        Methods:
          deploy:
            Body:
              - If: $.fail
                Then:
                  - Throw: DeployFailed
                    Message: it cannot deploy
              - $.port: 8080
          greet:
            Scope: Public
            Arguments:
              - who:
                  Contract: $.string().notNull()
            Body:
              - Return: format('{0} greets {1}', name($this), $who)
        """),
}


def environment(env_id: str, *apps: dict) -> dict:
    """A t.dep.Env model holding ``apps``."""
    return {"?": {"id": env_id, "type": "t.dep.Env"}, "applications": list(apps)}


def app(app_id: str, name: str, **values: object) -> dict:
    return {"?": {"id": app_id, "type": "t.dep.App", "name": name}, **values}


@pytest.fixture()
def deploying(tmp_path: Path):
    """``engine(command, *words)``: murano-engine on the t.dep package, in tmp_path with
    a local cloud of its own; models are written as ``<name>.json`` with ``model()``."""
    write_package(tmp_path / "packages", "t.dep", DEPLOYED)
    (tmp_path / "engine.ini").write_text(f"[local_cloud]\nstate_dir = {tmp_path / 'cloud'}\n")

    def model(name: str, objects: dict) -> str:
        (tmp_path / f"{name}.json").write_text(json.dumps(objects))
        return f"{name}.json"

    def engine(command: str, *words: str, state: str = "state.json"
               ) -> subprocess.CompletedProcess:
        return cli(command, *words, "-l", str(tmp_path / "packages"), "--state", state,
                   "--config", str(tmp_path / "engine.ini"), cwd=tmp_path)

    return model, engine


def test_outputs_are_headed_by_the_objects_name_and_actions_take_it(deploying,
                                                                      tmp_path: Path) -> None:
    model, engine = deploying
    given = model("web", environment("e" * 32, app("a" * 32, "web"), app("b" * 32, "db")))
    done = engine("deploy", given)
    assert done.returncode == 0, done.stderr
    headings = [line for line in done.stdout.splitlines() if line.endswith("(t.dep.App)")]
    assert headings == ["web (t.dep.App)", "db (t.dep.App)"]  # (the ids before)
    assert "  port: 8080" in done.stdout
    acted = engine("action", "web", "greet", "--arg", "who=bob")
    assert acted.returncode == 0, acted.stderr
    assert json.loads(acted.stdout[acted.stdout.index('"'):acted.stdout.rindex('"') + 1]) \
        == "web greets bob"
    named_twice = model("twice", environment("e" * 32, app("a" * 32, "web"),
                                             app("c" * 32, "web")))
    assert engine("deploy", named_twice).returncode == 0
    refused = engine("action", "web", "greet", "--arg", "who=bob")
    assert refused.returncode == 1
    assert refused.stderr == (f"error: 2 objects are named web: {'a' * 32} (t.dep.App); "
                              f"{'c' * 32} (t.dep.App); give the id of the one to act on\n")


def test_a_failed_deploy_says_what_to_do_next(deploying, tmp_path: Path) -> None:
    model, engine = deploying
    assert engine("deploy", model("ok", environment("e" * 32, app("a" * 32, "web")))
                  ).returncode == 0
    failed = engine("deploy", model("bad", environment("e" * 32, app("a" * 32, "web",
                                                                   fail=True))))
    assert failed.returncode == 1
    last = failed.stderr.splitlines()[-2:]
    assert re.fullmatch(r"deploy failed after [\d.]+ s \(t\.dep\.DeployFailed\); state saved "
                        r"to state\.json", last[0]), last
    assert last[1] == (
        "Fix the cause (the model, or a package), then run `murano-engine deploy bad.json "
        "--state state.json` again: it carries on from what this run did, making nothing "
        "twice. Or remove the environment with `murano-engine destroy --state state.json`.")


def test_a_deploy_of_an_unknown_class_writes_no_state_file(deploying, tmp_path: Path) -> None:
    model, engine = deploying
    unknown = {"?": {"id": "f" * 32, "type": "t.dep.Typo"}, "applications": []}
    failed = engine("deploy", model("typo", unknown), state="typo.state.json")
    assert failed.returncode == 1
    assert "class t.dep.Typo is not found" in failed.stdout
    assert "it made nothing, so no state file was written" in failed.stderr
    assert not (tmp_path / "typo.state.json").exists()


def test_a_refusal_names_the_state_file_that_holds_the_environment(deploying,
                                                                    tmp_path: Path) -> None:
    """Deploying X onto the state file of Y is refused; the advice named a new file,
    X.state.json, which was refused in turn while another file held X."""
    from murano_engine.cli import held_environments
    model, engine = deploying
    config = {"local_cloud": {"state_dir": str(tmp_path / "cloud")}}
    for state, env_id in (("x-held.json", "1" * 32), ("y.json", "2" * 32)):
        (tmp_path / state).write_text(json.dumps({
            "Objects": environment(env_id), "Resources": {"queues": [f"q-{env_id}"]},
            "Run": {"packages": [], "config": None}}))
        held_environments.hold(config, tmp_path / state, env_id)
    refused = engine("deploy", model("x", environment("1" * 32)), state="y.json")
    assert refused.returncode == 1
    assert refused.stderr == (
        f"error: y.json holds environment {'2' * 32}; x.json is environment {'1' * 32}. "
        f"Each environment has its own state file: deploy it with --state "
        f"{tmp_path / 'x-held.json'}, which holds it, or first remove the other with "
        f"`murano-engine destroy --state y.json`\n")
    # held by none: a new file named after the model
    (tmp_path / "x-held.json").unlink()
    refused = engine("deploy", "x.json", state="y.json")
    assert "deploy it with --state x.state.json, or first remove" in refused.stderr
