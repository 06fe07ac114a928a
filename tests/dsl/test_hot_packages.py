"""HOT packages (``Format: Heat.HOT/1.0``): loading, the generated class, ``validate``.

examples/hot-store is the package of these tests; tests/apps/test_hot_deploy.py
deploys it, tests/api/test_hot_import.py imports it through the API.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
import yaml
from dsl_helpers import REPO, cli

from murano_engine.dsl.expressions import Expression
from murano_engine.dsl.packages import (
    FolderSource,
    HotPackage,
    PackageLoader,
    generated_ui,
    read_manifest,
)
from murano_engine.dsl.validation import validate_package
from murano_engine.engine.interpreter import build_interpreter

EXAMPLE = REPO / "examples" / "hot-store"
MANIFEST = "Format: Heat.HOT/1.0\nType: Application\nFullName: {name}\nDescription: a HOT package\n"


def hot_package(root: Path, template: str, name: str = "t.hot.App",
                manifest: str = MANIFEST) -> Path:
    path = root / name
    path.mkdir(parents=True)
    (path / "manifest.yaml").write_text(manifest.format(name=name))
    (path / "template.yaml").write_text(textwrap.dedent(template).lstrip())
    return path


def test_the_example_validates() -> None:
    assert validate_package(EXAMPLE, build_interpreter()) == []
    done = cli("validate", str(EXAMPLE))
    assert (done.returncode, done.stdout) == (0, f"{EXAMPLE}: OK\n")


def test_the_generated_class() -> None:
    """One class named as the package, an Application, with Murano's properties."""
    loader = PackageLoader([REPO / "examples"], build_interpreter())
    package = loader.find_package("io.example.hot.Store")
    assert isinstance(package, HotPackage)
    assert list(package.class_files) == ["io.example.hot.Store"]
    cls = loader.find_class("io.example.hot.Store")
    assert cls.package is package
    assert [p.name for p in cls.parents] == ["io.murano.Application"]
    usages = {name: spec.usage for name, spec in cls.properties.items()}
    assert usages == {"name": "In", "templateParameters": "In", "hotEnvironment": "In",
                      "templateOutputs": "Out", "generatedHeatStackName": "Out"}
    parameters = cls.properties["templateParameters"].contract
    assert list(parameters) == ["cidr", "volume_size", "tier", "owner"]
    assert all(isinstance(c, Expression) for c in parameters.values())
    # each parameter's contract is placed at the parameter's declaration
    template = EXAMPLE / "template.yaml"
    lines = template.read_text().splitlines()
    for name, contract in parameters.items():
        assert contract.position.file == str(template)
        assert lines[contract.position.line - 2].strip() == f"{name}:"
    assert parameters["volume_size"].source.startswith("$.int()")
    assert parameters["volume_size"].source.endswith(".notNull()"), "no default: required"
    assert not parameters["tier"].source.endswith(".notNull()")
    outputs = cls.properties["templateOutputs"].contract
    assert list(outputs) == ["network_id", "subnet_cidr", "volume_size", "welcome"]
    assert {m for m in cls.methods} >= {"deploy", ".destroy"}
    # the template is the resource named as the class, as in Murano
    assert package.read_resource("io.example.hot.Store") == template.read_bytes()


def test_the_generated_ui() -> None:
    source = FolderSource(EXAMPLE)
    ui = yaml.safe_load(generated_ui(source, read_manifest(source)).replace("!yaql ", ""))
    assert ui["Application"]["?"]["type"] == "io.example.hot.Store"
    forms = {name: {f["name"]: f for f in body["fields"]}
             for form in ui["Forms"] for name, body in form.items()}
    # the parameter group first, then the parameters in no group
    assert list(forms) == ["appConfiguration", "group1", "group2"]
    assert list(forms["group1"]) == ["cidr"]
    assert list(forms["group2"]) == ["volume_size", "tier", "owner"]
    assert ui["Application"]["templateParameters"] == {
        "cidr": "$.group1.cidr", "volume_size": "$.group2.volume_size",
        "tier": "$.group2.tier", "owner": "$.group2.owner"}
    size = forms["group2"]["volume_size"]
    assert (size["type"], size["required"], size["label"]) == ("integer", True,
                                                               "Volume size (GB)")
    assert forms["group2"]["owner"]["maxLength"] == 32
    assert forms["group2"]["tier"]["initial"] == "standard"
    assert forms["group1"]["cidr"]["validators"][0]["message"].startswith("an IPv4 network")


def test_a_parameter_named_with_a_dash_makes_a_wizard_that_can_be_answered(
        tmp_path: Path) -> None:
    """A dynamic UI reads a field name that is no plain word as yaql: the field of
    ``db-password`` was ``db - password``, a field no answer could reach."""
    from murano_engine.web.dynamic_ui import translate
    path = hot_package(tmp_path, "heat_template_version: 2016-10-14\nparameters:\n"
                       "  db-password: {type: string}\n  db_password: {type: string}\n"
                       "resources: {}\n", "t.hot.Dash")
    source = FolderSource(path)
    text = generated_ui(source, read_manifest(source))
    fields = [f["name"] for f in yaml.safe_load(text.replace("!yaql ", ""))["Forms"][1][
        "group1"]["fields"]]
    assert fields == ["db_password", "db_password_2"]
    model = translate(text, {"appConfiguration": {"name": "dash"},
                             "group1": {"db_password": "s3cret", "db_password_2": "other"}})
    assert model["templateParameters"] == {"db-password": "s3cret", "db_password": "other"}


def test_template_problems_are_listed_with_their_lines(tmp_path: Path) -> None:
    path = hot_package(tmp_path, """
        heat_template_version: 2016-10-14
        parameters:
          kind:
            type: integer
          size:
            type: number
            constraints:
              - range: {min: one}
          word:
            type: string
            constraints:
              - allowed_pattern: '[a-'
              - frobnicate: 1
              - range: {min: 1}
        outputs: [a]
    """)
    template = path / "template.yaml"
    problems = validate_package(path, build_interpreter())
    assert problems == [
        f"{template}:1:1: not a HOT template: resources must be a mapping",
        f"{template}:1:1: outputs must be a mapping",
        f"{template}:4:5: parameter 'kind': type must be one of string, number, boolean, "
        f"json, comma_delimited_list, not 'integer'",
        f"{template}:8:9: parameter 'size': range takes numbers min and/or max",
        problems[4],
        f"{template}:13:9: parameter 'word': a constraint needs one of length, range, "
        f"allowed_values, allowed_pattern, custom_constraint",
        f"{template}:14:9: parameter 'word': range applies to number parameters only",
    ]
    assert problems[4].startswith(f"{template}:12:9: parameter 'word': allowed_pattern "
                                  f"'[a-' is not a regular expression")
    done = cli("validate", str(path))
    assert done.returncode == 1 and done.stderr == "7 problem(s) found\n"


def test_manifest_problems(tmp_path: Path) -> None:
    no_template = tmp_path / "t.hot.None"
    no_template.mkdir()
    (no_template / "manifest.yaml").write_text(MANIFEST.format(name="t.hot.None"))
    assert validate_package(no_template, build_interpreter()) == [
        f"{no_template / 'manifest.yaml'}:1:9: a Heat.HOT package needs template.yaml beside "
        f"its manifest"]
    later = hot_package(tmp_path, "resources: {}\n", "t.hot.Later",
                        MANIFEST.replace("1.0", "2.0"))
    assert validate_package(later, build_interpreter()) == [
        f"{later / 'manifest.yaml'}:1:9: unsupported package format 'Heat.HOT/2.0' "
        f"(Heat.HOT/1.0 is supported)"]
    taken = hot_package(tmp_path, "heat_template_version: 2016-10-14\nresources: {}\n",
                        "io.murano.Application")
    [problem] = validate_package(taken, build_interpreter())
    assert "defines io.murano.Application, reserved for the engine's core library" in problem


def test_environment_files_turn_the_parameter_checks_off(tmp_path: Path) -> None:
    """As in Murano: an environment file may supply parameters, so none is checked."""
    path = tmp_path / "t.hot.Env"
    shutil.copytree(EXAMPLE, path)
    environments = path / "Resources" / "HotEnvironments"
    environments.mkdir()
    (environments / "small.yaml").write_text("parameters: {volume_size: 2}\n")
    template = path / "template.yaml"
    template.write_text(template.read_text().replace("type: number", "type: float"))
    assert validate_package(path, build_interpreter()) == []
    loader = PackageLoader([tmp_path], build_interpreter())
    cls = loader.find_class("io.example.hot.Store")
    assert cls.properties["templateParameters"].contract == {}


@pytest.mark.parametrize(("kind", "constraint", "message"), [
    ("number", "range: {min: 1, max: 16}", "size: the value must be at least 1 and at most 16"),
    ("string", "length: {max: 3}", "size: the length must be at most 3"),
    ("number", "allowed_values: [1, 2]", "size must be one of 1, 2"),
])
def test_constraint_messages(tmp_path: Path, kind: str, constraint: str, message: str) -> None:
    path = hot_package(tmp_path, f"""
        heat_template_version: 2016-10-14
        parameters:
          size:
            type: {kind}
            default: 1
            constraints:
              - {constraint}
        resources: {{}}
    """)
    cls = PackageLoader([tmp_path], build_interpreter()).find_class("t.hot.App")
    contract = cls.properties["templateParameters"].contract["size"]
    assert contract.source.endswith(f", '{message}')")
    assert validate_package(path, build_interpreter()) == []


def test_constraints_of_lists_and_maps_are_left_to_the_cloud(tmp_path: Path) -> None:
    hot_package(tmp_path, """
        heat_template_version: 2016-10-14
        parameters:
          names:
            type: comma_delimited_list
            constraints:
              - length: {max: 3}
        resources: {}
    """)
    cls = PackageLoader([tmp_path], build_interpreter()).find_class("t.hot.App")
    assert cls.properties["templateParameters"].contract["names"].source == "$.notNull()"


def test_get_file_of_a_file_the_package_lacks_is_a_problem_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "t.hot.Files"
    shutil.copytree(EXAMPLE, path)
    template = path / "template.yaml"
    text = template.read_text()
    template.write_text(text.replace("{get_file: welcome.txt}", "{get_file: missing.txt}"))
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "get_file" in row)
    column = text.splitlines()[line - 1].index("{get_file") + 1
    problems = validate_package(path, build_interpreter())
    assert problems == [f"{template}:{line}:{column}: get_file 'missing.txt' is not a file of "
                        f"the package's Resources/HotFiles/ (it has: welcome.txt)"]
    done = cli("validate", str(path))
    assert done.returncode == 1 and "get_file 'missing.txt'" in done.stdout + done.stderr
