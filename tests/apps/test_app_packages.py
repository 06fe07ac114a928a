"""The application packages in dsl_packages/: their MuranoPL tests, plans, scripts and UIs.

Every TestFixture of every package runs as one pytest item (as
tests/test_muranopl_suite.py does for the conformance suite). The other
tests check what the MuranoPL tests cannot see: each plan's scripts exist,
each plan command is a function its scripts define, the shared PowerShell
helpers are identical copies, no script logs a password, the PowerShell
parses (tree-sitter-powershell), and each UI definition refers to fields
and classes that exist.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from powershell_syntax import syntax_errors

from murano_engine.cli.test_runner import find_tests, mocking_interpreter, run_test
from murano_engine.dsl.packages import PackageLoader, core_class_names
from murano_engine.dsl.validation import validate_package

ROOT = Path(__file__).resolve().parents[2] / "dsl_packages"
LOADER = PackageLoader([ROOT], mocking_interpreter())
PACKAGES = sorted(name for name in LOADER.packages if (ROOT / name).is_dir())
CASES = [(cls, method) for name in PACKAGES for cls, method in find_tests(LOADER, name)]
WINDOWS = [name for name in PACKAGES if name.startswith("io.murano.windows.")]
PS_FUNCTION = re.compile(r"^\s*function\s+([A-Za-z][\w-]*)", re.MULTILINE | re.IGNORECASE)


def _templates(package: str) -> list[Path]:
    return sorted((ROOT / package / "Resources").glob("*.template"))


def _load(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("cls", "method"), CASES, ids=[f"{c.name}.{m.name}" for c, m in CASES])
def test_muranopl(cls, method):
    result = run_test(LOADER, cls, method)
    assert result.passed, result.detail


def test_every_package_loads_and_has_tests():
    assert not LOADER.problems
    assert {"io.murano.windows.ActiveDirectory", "io.murano.windows.FailoverCluster",
            "io.murano.windows.SqlServerCluster",
            "io.murano.apps.linux.ReplicatedKV", "io.murano.apps.linux.HelloWeb"} <= set(PACKAGES)
    for name in PACKAGES:
        assert find_tests(LOADER, name), f"{name} has no MuranoPL tests"
        package = LOADER.find_package(name)
        # every class file defines the class the manifest names, in this package
        classes = package.classes()
        assert [cls.name for cls in classes] == list(package.class_files)
        for cls in classes:
            assert cls.package is package, cls.name
            # its parents resolve, up to the root of every MuranoPL class
            assert "io.murano.Object" in {a.name for a in cls.ancestors()}, cls.name
        # every method body and expression compiles
        assert validate_package(ROOT / name, LOADER.interpreter, [ROOT]) == [], name


@pytest.mark.parametrize("package", PACKAGES)
def test_plan_scripts_exist_and_define_their_commands(package):
    scripts = ROOT / package / "Resources" / "scripts"
    templates = _templates(package)
    assert templates, f"{package} has no plan templates"
    for path in templates:
        plan = _load(path)
        if "FormatVersion" not in plan:  # v1: PowerShell functions called by name
            names = plan["Scripts"]
            for name in names:
                assert (scripts / name).is_file(), f"{path.name}: missing script {name}"
            defined = {m.lower() for name in names
                       for m in PS_FUNCTION.findall((scripts / name).read_text(encoding="utf-8"))}
            for command in plan["Commands"]:
                assert command["Name"].lower() in defined, \
                    f"{path.name}: {command['Name']} is not defined by {names}"
            assert plan.get("RebootOnCompletion", 0) in (0, 1, 2)
        else:  # v2: Application scripts with their files
            for name, script in plan["Scripts"].items():
                for file in [script["EntryPoint"], *script.get("Files", [])]:
                    assert (scripts / file).is_file(), f"{path.name}: {name} misses {file}"
                assert re.search(rf"\b{name}\(", plan["Body"]), \
                    f"{path.name}: Body never runs {name}"


def test_shared_powershell_helpers_are_one_copy():
    copies = {name: (ROOT / name / "Resources/scripts/Common.ps1").read_text() for name in WINDOWS}
    assert len(set(copies.values())) == 1, "Common.ps1 differs between the Windows packages"


@pytest.mark.parametrize("package", WINDOWS)
def test_scripts_never_log_passwords(package):
    for script in sorted((ROOT / package / "Resources" / "scripts").glob("*.ps1")):
        for number, line in enumerate(script.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"Write-(MuranoLog|Host|Output|Verbose|Debug|Information)", line):
                assert not re.search(r"\$\w*(Password|Credential)", line, re.IGNORECASE), \
                    f"{script.name}:{number} writes a secret: {line.strip()}"
            assert "Show-InvocationInfo" not in line, f"{script.name}:{number}"


@pytest.mark.parametrize("package", WINDOWS)
def test_powershell_syntax(package):
    scripts = sorted((ROOT / package / "Resources" / "scripts").glob("*.ps1"))
    assert scripts, f"{package} has no PowerShell scripts"
    problems = [p for script in scripts
                for p in syntax_errors(script.read_bytes(), str(script.relative_to(ROOT)))]
    assert problems == []


def _ui_references(text: str) -> set[tuple[str, str]]:
    return set(re.findall(r"\$\.(\w+)\.(\w+)", text))


@pytest.mark.parametrize("package", PACKAGES)
def test_ui_definition(package):
    path = ROOT / package / "UI" / "ui.yaml"
    ui = _load(path)
    assert str(ui["Version"]).startswith("2"), "dynamic UI format 2.x"
    app_type = ui["Application"]["?"]["type"]
    classes = {c for name in PACKAGES for c in LOADER.find_package(name).class_files}
    assert app_type in classes
    for found in re.findall(r"type: ([\w.]+)", path.read_text(encoding="utf-8")):
        if found.startswith("io.murano.") and "." in found:
            assert found in classes or found in core_class_names(), found
    fields = {}
    for form in ui["Forms"]:
        ((form_name, body),) = form.items()
        fields[form_name] = {f["name"] for f in body["fields"]}
    referenced = _ui_references(yaml.safe_dump({k: ui[k] for k in ("Application", "Templates")
                                                if k in ui}))
    for form_name, field in referenced:
        assert form_name in fields, f"unknown form {form_name}"
        assert field in fields[form_name], f"unknown field {form_name}.{field}"
    secret = {f for body in fields.values() for f in body if "assword" in f}
    for form in ui["Forms"]:
        ((_, body),) = form.items()
        for field in body["fields"]:
            if field["name"] in secret:
                assert field["type"] == "password", f"{field['name']} must be a password field"
