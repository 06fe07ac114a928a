"""``murano-engine validate``: every problem of a package, each with file and line."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

from dsl_helpers import class_text, cli, write_package

from murano_engine.dsl.validation import validate_package
from murano_engine.engine.interpreter import build_interpreter
from tests.zips import damaged

BROKEN_CLASSES = {
    "Yaml": class_text("t.v", "Yaml", """
        Methods:
          m:
            Body:
              - $x: [1,
    """),
    "Prefix": class_text("t.v", "Prefix", "Extends: zz:Base\n"),
    "Usage": class_text("t.v", "Usage", """
        Properties:
          p:
            Usage: Weird
            Contract: $.string()
        Methods:
          m:
            Scope: Nowhere
    """),
    "Instruction": class_text("t.v", "Instruction", """
        Methods:
          m:
            Body:
              - Frobnicate: 1
    """),
    "Yaql": class_text("t.v", "Yaql", """
        Methods:
          m:
            Body:
              - Return: !yaql '1 +'
    """),
    "Expr": class_text("t.v", "Expr", """
        Methods:
          m:
            Body:
              - $x: $.bar(
    """),
    "Good": class_text("t.v", "Good", """
        Methods:
          m:
            Body:
              - Return: format('{0}', len([1, 2]))
    """),
}


def broken_package(root: Path) -> Path:
    path = write_package(root, "t.v", BROKEN_CLASSES)
    manifest = path / "manifest.yaml"
    manifest.write_text(manifest.read_text() + "  t.v.Missing: Missing.yaml\n")
    return path


def expected(path: Path) -> list[str]:
    classes = path / "Classes"
    return [
        f"{classes / 'Expr.yaml'}:7:9: invalid expression '$.bar(': ",
        f"{classes / 'Instruction.yaml'}:7:9: unknown instruction with keys ['Frobnicate']",
        f"{classes / 'Missing.yaml'}: class file of t.v.Missing is missing",
        f"{classes / 'Prefix.yaml'}:4:10: unknown namespace prefix 'zz' in 'zz:Base'",
        f"{classes / 'Usage.yaml'}:6:5: property 'p': unknown Usage 'Weird'",
        f"{classes / 'Usage.yaml'}:10:5: method 'm': unknown Scope 'Nowhere'",  # the same class
        f"{classes / 'Yaml.yaml'}:8:1: malformed YAML",
        f"{classes / 'Yaql.yaml'}:7:17: not a valid yaql expression: '1 +'",
    ]


def test_validate_lists_every_problem_in_process(tmp_path: Path) -> None:
    path = broken_package(tmp_path)
    problems = validate_package(path, build_interpreter())
    assert len(problems) == len(expected(path))
    for problem, start in zip(problems, expected(path), strict=True):
        assert problem.startswith(start), (problem, start)


def test_validate_command_lists_every_problem_and_exits_1(tmp_path: Path) -> None:
    path = broken_package(tmp_path)
    done = cli("validate", str(path))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert len(lines) == 8
    for line, start in zip(lines, expected(path), strict=True):
        assert line.startswith(start)
    assert done.stderr == "8 problem(s) found\n"
    assert "Traceback" not in done.stderr


def test_validate_ok_for_a_good_package(tmp_path: Path) -> None:
    path = write_package(tmp_path, "t.ok", {"Good": BROKEN_CLASSES["Good"].replace("t.v", "t.ok")})
    assert validate_package(path, build_interpreter()) == []
    done = cli("validate", str(path))
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{path}: OK\n", "")


def test_validate_the_bundled_example_and_core_library() -> None:
    repo = Path(__file__).resolve().parents[2]
    assert validate_package(repo / "examples" / "hello", build_interpreter()) == []
    assert validate_package(repo / "meta" / "io.murano", build_interpreter()) == []


def test_validate_reports_manifest_problems_each_naming_the_manifest(tmp_path: Path) -> None:
    path = write_package(tmp_path, "t.m", folder="m",
                         manifest="Type: Service\nClasses: [x]\n")
    problems = validate_package(path, build_interpreter())
    where = path / "manifest.yaml"
    assert problems == [f"{where}:1:1: FullName is required",  # (no line of its own)
                        f"{where}:1:7: Type must be Application or Library, not 'Service'",
                        f"{where}:2:10: Classes must be a mapping"]


def test_validate_names_the_line_of_a_broken_ui_definition(tmp_path: Path) -> None:
    path = write_package(tmp_path, "t.ok", {"Good": BROKEN_CLASSES["Good"].replace("t.v", "t.ok")})
    (path / "UI").mkdir()
    (path / "UI" / "ui.yaml").write_text(
        "Version: 2\nApplication:\n  ?: {type: t.ok.Good}\nForms:\n  - one:\n"
        "      fields:\n        - name: a\n          type: nosuchtype\n")
    done = cli("validate", str(path))
    assert done.returncode == 1
    assert done.stdout == (f"{path / 'UI' / 'ui.yaml'}:7:11: field one.a has the unknown "
                           f"type 'nosuchtype'\n")
    (path / "UI" / "ui.yaml").write_text(
        "Version: 2\nApplication:\n  ?: {type: t.ok.Good}\nForms:\n  - one:\n"
        "      fields:\n        - name: a\n          type: string\n")
    assert cli("validate", str(path)).returncode == 0


def test_validate_a_broken_zip(tmp_path: Path) -> None:
    broken = tmp_path / "p.zip"
    broken.write_bytes(b"not a zip")
    done = cli("validate", str(broken))
    assert done.returncode == 1
    assert done.stdout.startswith(f"{broken}: broken package zip")
    assert "Traceback" not in done.stderr


def test_validate_refuses_a_zip_bomb_before_unpacking_it(tmp_path: Path) -> None:
    # 64 MiB of one byte deflate to some 64 KB: validate unpacked a 3 GB one whole (its
    # memory ran out) before checking a class file's size
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.yaml", "Format: 1.4\nFullName: t.bomb\nType: Library\n"
                                          "Classes:\n  t.bomb.C: C.yaml\n")
        archive.writestr("Classes/C.yaml", b"#" * (64 << 20))
    done = cli("validate", str(bomb))
    assert done.returncode == 1
    assert done.stdout.startswith(f"{bomb}: broken package zip: 'Classes/C.yaml' expands ")
    assert "times; the package looks like a zip bomb" in done.stdout
    assert "Traceback" not in done.stderr


def test_validate_names_a_damaged_file_of_a_zip(tmp_path: Path) -> None:
    path = write_package(tmp_path, "t.ok", {"Good": BROKEN_CLASSES["Good"].replace("t.v", "t.ok")})
    packed = tmp_path / "p.zip"
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as archive:
        for member in sorted(p for p in path.rglob("*") if p.is_file()):
            archive.write(member, member.relative_to(path).as_posix())
    packed.write_bytes(damaged(packed.read_bytes(), "Classes/Good.yaml"))
    done = cli("validate", str(packed))
    assert done.returncode == 1
    assert done.stdout.startswith(f"{packed}!Classes/Good.yaml: cannot read class file: "
                                  f"damaged in the zip: Error -3 while decompressing data")
    assert done.stderr == "1 problem(s) found\n"


def test_the_package_given_is_checked_not_a_copy_beside_it_or_in_l(tmp_path: Path) -> None:
    """A package's source folder beside its zip (or in a -l folder): each is checked as
    itself, though both are the same name and version."""
    good = BROKEN_CLASSES["Good"].replace("t.v", "t.ok")
    folder = write_package(tmp_path, "t.ok", {"Good": good})
    broken = write_package(tmp_path / "elsewhere", "t.ok", {"Good": good + "  x: [\n"})
    packed = tmp_path / "z.zip"  # listed after the folder beside it
    with zipfile.ZipFile(packed, "w") as archive:
        for member in sorted(p for p in broken.rglob("*") if p.is_file()):
            archive.write(member, member.relative_to(broken).as_posix())
    done = cli("validate", str(packed))
    assert done.returncode == 1
    assert done.stdout.startswith(f"{packed}!Classes/Good.yaml:")
    assert "malformed YAML" in done.stdout
    done = cli("validate", str(broken), "-l", str(tmp_path))
    assert done.returncode == 1
    assert done.stdout.startswith(f"{broken / 'Classes' / 'Good.yaml'}:")
    assert cli("validate", str(folder), "-l", str(tmp_path / "elsewhere")).returncode == 0


def test_required_packages_are_found_beside_the_package_or_with_l(tmp_path):
    repo = Path(__file__).resolve().parents[2]
    alone = tmp_path / "alone" / "io.murano.windows.FailoverCluster"
    shutil.copytree(repo / "dsl_packages" / "io.murano.windows.FailoverCluster", alone)
    missing = cli("validate", str(alone))
    assert missing.returncode == 1
    assert "package io.murano.windows.ActiveDirectory" in missing.stdout
    found = cli("validate", str(alone), "-l", str(repo / "dsl_packages"))
    assert found.returncode == 0, found.stdout + found.stderr
    beside = cli("validate", str(repo / "dsl_packages" / "io.murano.windows.SqlServerCluster"))
    assert beside.returncode == 0, beside.stdout + beside.stderr


def test_contracts_use_only_contract_functions(tmp_path):
    """A call on the value in a contract that is no contract function is a static error with
    file and line; check()'s predicate is an ordinary expression."""
    path = write_package(tmp_path, "t.c", {"C": class_text("t.c", "C", """
        Properties:
          a:
            Contract: $.int().nosuchcontract()
          b:
            Contract: [$.string().check($.toLower() = $)]
          c:
            Contract: {$.string(): $.frob()}
        Methods:
          m:
            Arguments:
              - x:
                  Contract: $.class(C).notNull()
              - y:
                  Contract: $.notNull().weird(1)
            Body:
              - Return: 1
    """)})
    where = path / "Classes" / "C.yaml"
    problems = validate_package(path, build_interpreter())
    assert [p.split(" is not")[0] for p in problems] == [
        f"{where}:6:15: contract '$.int().nosuchcontract()': nosuchcontract()",
        f"{where}:10:28: contract '$.frob()': frob()",
        f"{where}:17:21: contract '$.notNull().weird(1)': weird()",
    ]
    assert all("a contract function (bool(), check(), class()" in p for p in problems)
    done = cli("validate", str(path))
    assert done.returncode == 1 and done.stderr == "3 problem(s) found\n"


def test_a_package_without_description_passes_with_a_warning_naming_the_client_check(tmp_path):
    path = write_package(tmp_path, "t.nodesc", {"Good": BROKEN_CLASSES["Good"].replace(
        "t.v", "t.nodesc")}, manifest="Format: 1.4\nType: Application\nFullName: t.nodesc\n"
        "Classes:\n  t.nodesc.Good: Good.yaml\n")
    done = cli("validate", str(path))
    assert done.returncode == 0
    assert done.stdout == f"{path}: OK\n"
    assert done.stderr == (f"warning: {path / 'manifest.yaml'}: no Description: the murano "
                           "client's package check (murano-pkg-check E020) refuses such a "
                           "package in 'murano package-import'\n")


def test_validate_refuses_names_with_control_or_format_characters(tmp_path: Path) -> None:
    """A right-to-left override in a method's name passed validate and was printed raw
    in messages, showing their text reversed."""
    path = write_package(tmp_path, "t.names", {"C": class_text("t.names", "C", """
        Properties:
          "bad\\u0000prop":
            Contract: $
        Methods:
          "m\\u202e":
            Body:
              - Return: 1
        """)})
    done = cli("validate", str(path))
    assert done.returncode == 1
    assert "class t.names.C: property name 'bad\\x00prop' holds a control or format " \
        "character" in done.stdout, done.stdout
    assert "class t.names.C: method name 'm\\u202e' holds a control or format character" \
        in done.stdout, done.stdout
    assert "\u202e" not in done.stdout + done.stderr
