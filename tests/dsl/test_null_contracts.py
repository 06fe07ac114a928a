"""A null and the contract it meets, on every way a null reaches a declaration.

Murano passes a null argument without its contract only when the call itself
is written with a literal ``null`` (``$.m(null)``, ``$.m(v => null)``): yaql
hands such an argument over as its constant, whose conversion returns null as
it is. Every other null (a variable, ``(null)``, a property, a dict value,
another method's argument, the object model, a value from outside, a property
assignment, a class config) goes through the contract: ``$.notNull()``
refuses it, ``[$.int()]`` makes it ``[]``, ``[$.int(), 3]`` refuses it.

The MuranoPL paths are a package written here, one test method per path and
contract; each asserts Murano's outcome. With the original Murano at hand
(``MURANO_ORIGINAL``, as for benchmarks/murano_side_by_side.py) the same
package and the same calls from outside run there too and must give the same
outcomes: the expectations below were checked that way.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from dsl_helpers import REPO, cli

from murano_engine.cli.test_runner import find_tests, mocking_interpreter, run_test
from murano_engine.dsl import errors
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.model import load_model
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.class_configs import ClassConfigFiles

PACKAGE = "nullcontracts"
#: contract name -> (contract, a value the contract keeps, for Defaults)
CONTRACTS = {
    "NotNull": ("$.notNull()", "1"),
    "Ints": ("[$.int()]", "[]"),
    "ThreeInts": ("[$.int(), 3]", "[1, 2, 3]"),
}
REFUSED = "refused"
#: a null that went through the contract: refused, [] and refused
CHECKED = {"NotNull": REFUSED, "Ints": [], "ThreeInts": REFUSED}
#: a literal null argument: null whatever the contract
LITERAL = {"NotNull": None, "Ints": None, "ThreeInts": None}

#: path name -> (MuranoPL lines giving $outcome, with {c} the contract's name; outcomes)
PATHS: dict[str, tuple[list[str], dict[str, Any]]] = {
    "LiteralArgument": (["$outcome: $.take{c}(null)"], LITERAL),
    "LiteralKeywordArgument": (["$outcome: $.take{c}(v => null)"], LITERAL),
    "LiteralArgumentOfAStaticMethod": (["$outcome: :NullPaths.static{c}(null)"], LITERAL),
    "LiteralArgumentOfAnExtensionMethod": (["$s: x", "$outcome: $s.extend{c}(null)"], LITERAL),
    "LiteralVarArgsItem": (["$outcome: $.varArgs{c}(null)"],
                           {"NotNull": [None], "Ints": [None], "ThreeInts": [None]}),
    "LiteralKwArgsValue": (["$outcome: $.kwArgs{c}(a => null)"],
                           {"NotNull": {"a": None}, "Ints": {"a": None},
                            "ThreeInts": {"a": None}}),
    "ParenthesisedNull": (["$outcome: $.take{c}((null))"], CHECKED),
    "MissingArgument": (["$outcome: $.take{c}()"], CHECKED),
    "Variable": (["$n: null", "$outcome: $.take{c}($n)"], CHECKED),
    "Property": (["$outcome: $.take{c}($.nothing)"], CHECKED),
    "DictValue": (["$d: dict(v => null)", "$outcome: $.take{c}($d.v)"], CHECKED),
    "AnotherMethodsArgument": (["$outcome: $.relay{c}(null)"], CHECKED),
    "VariableToAStaticMethod": (["$n: null", "$outcome: :NullPaths.static{c}($n)"], CHECKED),
    "VariableToAnExtensionMethod": (["$n: null", "$s: x", "$outcome: $s.extend{c}($n)"],
                                    CHECKED),
    "VariableAsVarArgsItem": (["$n: null", "$outcome: $.varArgs{c}($n)"],
                              {"NotNull": REFUSED, "Ints": [[]], "ThreeInts": REFUSED}),
    "VariableAsKwArgsValue": (["$n: null", "$outcome: $.kwArgs{c}(a => $n)"],
                              {"NotNull": REFUSED, "Ints": {"a": []}, "ThreeInts": REFUSED}),
    "CallFunction": (["$outcome: call(take{c}, [null], {{}}, $this)"], CHECKED),
    "ReflectionInvoke": (
        ["$outcome: typeinfo($).methods.where($.name = take{c}).first().invoke($this, null)"],
        CHECKED),
    "InOutPropertyAssigned": (["$.inOut{c}: null", "$outcome: $.inOut{c}"], CHECKED),
    "OutPropertyAssigned": (["$.out{c}: null", "$outcome: $.out{c}"], CHECKED),
    "RuntimePropertyAssigned": (["$.runtime{c}: null", "$outcome: $.runtime{c}"], CHECKED),
    "PropertyGivenToNew": (["$outcome: new(Holder{c}, $this, v => null).v"], CHECKED),
    "InitArgumentGivenToNew": (["$outcome: new(InitHolder{c}, $this, v => null).got"], CHECKED),
}


def _method(name: str, contract: str, body: list[str], *, usage: str | None = None,
            scope: str | None = None, argument: str = "v", argument_usage: str | None = None,
            first: str | None = None) -> list[str]:
    lines = [f"  {name}:"]
    if usage:
        lines.append(f"    Usage: {usage}")
    if scope:
        lines.append(f"    Scope: {scope}")
    lines.append("    Arguments:")
    if first:
        lines += [f"      - {first}:", "          Contract: $"]
    lines += [f"      - {argument}:", f"          Contract: {contract}"]
    if argument_usage:
        lines.append(f"          Usage: {argument_usage}")
    lines.append("    Body:")
    lines += [f"      - {line}" for line in body]
    return lines


def _fixture_class() -> str:
    lines = ["Namespaces:", f"  =: {PACKAGE}", "  tst: io.murano.test",
             "Name: NullPaths", "Extends: tst:TestFixture", "Properties:",
             "  nothing:", "    Contract: $", "    Usage: InOut"]
    for short, (contract, kept) in CONTRACTS.items():
        for usage in ("InOut", "Out", "Runtime"):
            lines += [f"  {usage[0].lower() + usage[1:]}{short}:", f"    Contract: {contract}",
                      f"    Usage: {usage}", f"    Default: {kept}"]
    lines.append("Methods:")
    for short, (contract, _kept) in CONTRACTS.items():
        lines += _method(f"take{short}", contract, ["Return: $v"], scope="Public")
        lines += _method(f"relay{short}", "$", [f"Return: $.take{short}($v)"])
        lines += _method(f"static{short}", contract, ["Return: $v"], usage="Static")
        lines += _method(f"extend{short}", contract, ["Return: $v"], usage="Extension",
                         first="receiver")
        lines += _method(f"varArgs{short}", contract, ["Return: $v"], argument_usage="VarArgs")
        lines += _method(f"kwArgs{short}", contract, ["Return: $v"], argument_usage="KwArgs")
    for path, (body, outcomes) in PATHS.items():
        for short in CONTRACTS:
            lines += [f"  test{path}{short}:", "    Body:", "      - $outcome: unset",
                      "      - Try:"]
            lines += [f"          - {line.format(c=short)}" for line in body]
            lines += ["        Catch:",
                      "          - With: 'murano.dsl.exceptions.ContractViolationException'",
                      "            Do:",
                      f"              - $outcome: {REFUSED}",
                      f"      - $.assertEqual({_yaql(outcomes[short])}, $outcome)"]
    return "\n".join(lines) + "\n"


def _yaql(value: Any) -> str:
    """``value`` written as a yaql expression."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, list):
        return "[" + ", ".join(map(_yaql, value)) + "]"
    return "{" + ", ".join(f"{_yaql(k)} => {_yaql(v)}" for k, v in value.items()) + "}"


def _holders() -> str:
    documents = []
    for short, (contract, _kept) in CONTRACTS.items():
        documents.append("\n".join([
            "Namespaces:", f"  =: {PACKAGE}", f"Name: Holder{short}", "Properties:",
            "  v:", f"    Contract: {contract}"]))
        documents.append("\n".join([
            "Namespaces:", f"  =: {PACKAGE}", f"Name: InitHolder{short}", "Properties:",
            "  got:", "    Contract: $", "    Usage: Out", "Methods:", "  .init:",
            "    Arguments:", "      - v:", f"          Contract: {contract}", "    Body:",
            "      - $.got: $v"]))
        documents.append("\n".join([
            "Namespaces:", f"  =: {PACKAGE}", f"Name: Configured{short}", "Properties:",
            "  v:", f"    Contract: {contract}", "    Usage: Config"]))
    return "\n---\n".join(documents) + "\n"


def write_package(root: Path) -> Path:
    """The package of every MuranoPL path, in ``root/nullcontracts``."""
    package = root / PACKAGE
    (package / "Classes").mkdir(parents=True)
    (package / "Classes" / "NullPaths.yaml").write_text(_fixture_class())
    (package / "Classes" / "Holders.yaml").write_text(_holders())
    names = [f"{PACKAGE}.NullPaths: NullPaths.yaml"]
    names += [f"{PACKAGE}.{kind}{short}: Holders.yaml" for short in CONTRACTS
              for kind in ("Holder", "InitHolder", "Configured")]
    (package / "manifest.yaml").write_text(
        f"Format: MuranoPL/1.4\nType: Library\nFullName: {PACKAGE}\nName: null contracts\n"
        "Classes:\n" + "".join(f"  {line}\n" for line in names))
    return package


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("null-contracts")
    write_package(root)
    return root


@pytest.fixture(scope="module")
def loader(packages: Path) -> PackageLoader:
    return PackageLoader([packages, REPO / "meta"], mocking_interpreter())


TESTS = [f"test{path}{short}" for path in PATHS for short in CONTRACTS]


@pytest.mark.parametrize("name", TESTS)
def test_muranopl_path(loader: PackageLoader, name: str) -> None:
    (found,) = [(c, m) for c, m in find_tests(loader, PACKAGE) if m.name == name]
    result = run_test(loader, *found)
    assert result.passed, result.detail


def _outcome(call: Any) -> Any:
    try:
        value = call()
    except errors.ContractViolationException:
        return REFUSED
    return json.loads(json.dumps(value))


@pytest.mark.parametrize("short", list(CONTRACTS))
def test_a_null_from_a_python_caller_goes_through_the_contract(
        loader: PackageLoader, short: str) -> None:
    """As Murano's own unit tests call methods (test_not_null_contract_failure,
    test_list_contract_from_null, test_list_with_min_length_contract_failure), and as an
    action's arguments arrive."""
    executor = Executor(loader)
    fixture = executor.new_object(loader.find_class(f"{PACKAGE}.NullPaths"))
    assert _outcome(lambda: executor.call(fixture, f"take{short}", [None])) == CHECKED[short]
    assert _outcome(lambda: executor.call(fixture, f"take{short}", [], {"v": None},
                                          public_only=True)) == CHECKED[short]


@pytest.mark.parametrize("short", list(CONTRACTS))
def test_a_null_in_the_object_model_goes_through_the_contract(
        loader: PackageLoader, short: str) -> None:
    def load(kind: str, read: str) -> Any:
        model = {"Objects": {"?": {"type": f"{PACKAGE}.{kind}{short}", "id": "a1"}, "v": None}}
        obj = load_model(Executor(loader), model)
        assert obj is not None
        return obj.executor.get_property(obj, read, None)

    assert _outcome(lambda: load("Holder", "v")) == CHECKED[short]
    assert _outcome(lambda: load("InitHolder", "got")) == CHECKED[short]


@pytest.mark.parametrize("short", list(CONTRACTS))
def test_a_null_in_a_class_config_goes_through_the_contract(
        loader: PackageLoader, tmp_path: Path, short: str) -> None:
    (tmp_path / f"{PACKAGE}.Configured{short}.json").write_text('{"v": null}')
    executor = Executor(loader, services={"class_configs": ClassConfigFiles(tmp_path)})

    def make() -> Any:
        obj = executor.new_object(loader.find_class(f"{PACKAGE}.Configured{short}"))
        return executor.get_property(obj, "v", None)

    assert _outcome(make) == CHECKED[short]


def _run_ours(packages: Path, short: str) -> Any:
    done = cli("run", f"{PACKAGE}.NullPaths.take{short}", "--arg", "v=null", "-l", str(packages))
    if done.returncode != 0:
        assert "ContractViolationException" in done.stderr + done.stdout, done.stderr
        return REFUSED
    return json.loads(done.stdout)


@pytest.mark.parametrize("short", list(CONTRACTS))
def test_a_null_argument_from_the_command_line_goes_through_the_contract(
        packages: Path, short: str) -> None:
    assert _run_ours(packages, short) == CHECKED[short]


# -- the same against the original Murano, where it is at hand ------------------------

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "murano-engine"
MURANO = Path(os.environ.get("MURANO_ORIGINAL", CACHE / "murano-original"))
DRIVER = REPO / "benchmarks" / "side_by_side" / "murano_driver.py"
original = pytest.mark.skipif(
    not (MURANO / "venv" / "bin" / "python").exists(),
    reason=f"no original Murano tree at {MURANO} (MURANO_ORIGINAL; see benchmarks/README.md)")


def _murano(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(MURANO / "venv" / "bin" / "python"), str(DRIVER), *args],
                          capture_output=True, text=True, timeout=600, cwd=MURANO)


@original
def test_the_original_gives_every_muranopl_outcome(packages: Path) -> None:
    done = _murano("test", "-l", str(packages), "-l", str(MURANO / "meta"), PACKAGE)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert f"{len(TESTS)} passed, 0 failed" in last, done.stdout[-3000:] + done.stderr[-3000:]


@original
@pytest.mark.parametrize("short", list(CONTRACTS))
def test_the_original_gives_the_command_line_outcome(packages: Path, short: str) -> None:
    done = _murano("run", "-l", str(packages), "-l", str(MURANO / "meta"),
                   f"{PACKAGE}.NullPaths.take{short}", "--kwargs", '{"v": null}')
    if done.returncode != 0:
        assert "ContractViolationException" in done.stderr, done.stderr[-3000:]
        outcome: Any = REFUSED
    else:
        outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome == CHECKED[short] == _run_ours(packages, short)
