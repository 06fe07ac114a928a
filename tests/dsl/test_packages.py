"""Packages: folders and zips, manifests, version specs, Require, class lookup."""

from __future__ import annotations

import os
import warnings
import zipfile
from pathlib import Path

import pytest
from dsl_helpers import class_text, run_method, write_package

from murano_engine.dsl import errors
from murano_engine.dsl.errors import LoadError, LoadErrors
from murano_engine.dsl.packages import PackageLoader, parse_version, version_matches
from murano_engine.engine.interpreter import build_interpreter

INTERPRETER = build_interpreter()

APP_CLASSES = {
    "App": class_text("t.app", "App", """

        Extends: Base
        Properties:
          size:
            Contract: $.int()
            Default: 3
        Methods:
          run:
            Body:
              - Return: [$.size, $.baseName(), $.resource()]
          resource:
            Body:
              - Return: sys:Resources.string('greeting.txt')
    """, sys="io.murano.system"),
    "Base": class_text("t.app", "Base", """
        Methods:
          baseName:
            Body:
              - Return: base
    """),
}


def app_package(root: Path) -> Path:
    path = write_package(root, "t.app", APP_CLASSES)
    (path / "Resources").mkdir()
    (path / "Resources" / "greeting.txt").write_text("hi")
    return path


def zip_folder(folder: Path, target: Path, top: str | None = None) -> Path:
    with zipfile.ZipFile(target, "w") as archive:
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                name = file.relative_to(folder).as_posix()
                archive.write(file, f"{top}/{name}" if top else name)
    return target


def run_app(root: Path) -> object:
    assert not PackageLoader([root], INTERPRETER).problems
    return run_method([root], "t.app.App.run")


def test_folder_package_runs(tmp_path: Path) -> None:
    app_package(tmp_path / "src")
    assert run_app(tmp_path / "src") == (3, "base", "hi")


@pytest.mark.parametrize("top", [None, "t.app-1.0"])
def test_zip_package_loads_like_the_folder(tmp_path: Path, top: str | None) -> None:
    folder = app_package(tmp_path / "src")
    (tmp_path / "zips").mkdir()
    zip_folder(folder, tmp_path / "zips" / "app.zip", top)
    assert run_app(tmp_path / "zips") == run_app(tmp_path / "src")
    zipped = PackageLoader([tmp_path / "zips"], INTERPRETER).find_package("t.app")
    plain = PackageLoader([tmp_path / "src"], INTERPRETER).find_package("t.app")
    assert zipped.manifest == plain.manifest
    assert zipped.source.names() == plain.source.names()
    assert zipped.read_resource("greeting.txt") == b"hi"


def test_a_zip_holding_a_file_twice_is_refused_naming_it(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "twice.zip", "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate it writes
        archive.writestr("manifest.yaml", "Format: 1.4\nFullName: t.twice\n")
        archive.writestr("manifest.yaml", "Format: 1.4\nFullName: t.other\n")
    (problem,) = PackageLoader([tmp_path], INTERPRETER).problems
    assert str(problem) == (f"{tmp_path / 'twice.zip'}: broken package zip: the package "
                            "holds 'manifest.yaml' twice")


def test_a_broken_zip_is_one_clear_error_naming_the_zip(tmp_path: Path) -> None:
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"PK\x03\x04 this is not really a zip")
    loader = PackageLoader([tmp_path], INTERPRETER)
    (problem,) = loader.problems
    assert isinstance(problem, LoadError)
    assert problem.file == str(broken)
    assert "broken package zip" in str(problem)
    with pytest.raises(LoadError, match="broken.zip"):
        loader.add(broken)


def test_a_zip_without_manifest_is_refused(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "empty.zip", "w") as archive:
        archive.writestr("Classes/A.yaml", "Name: A\n")
    (problem,) = PackageLoader([tmp_path], INTERPRETER).problems
    assert "no manifest.yaml" in str(problem) and "empty.zip" in str(problem)


@pytest.mark.parametrize("entry", ["../evil.yaml", "../../evil.yaml", "/etc/evil.yaml"])
def test_a_class_path_leaving_a_zip_package_is_refused(tmp_path: Path, entry: str) -> None:
    manifest = f"Format: 1.4\nFullName: t.evil\nClasses:\n  t.evil.E: '{entry}'\n"
    with zipfile.ZipFile(tmp_path / "evil.zip", "w") as archive:
        archive.writestr("manifest.yaml", manifest)
    package = PackageLoader([tmp_path], INTERPRETER).find_package("t.evil")
    with pytest.raises(LoadError) as caught:
        package.load_class("t.evil.E")
    assert "evil.zip" in str(caught.value)

    with zipfile.ZipFile(tmp_path / "evil.zip", "w") as archive:  # with such a member
        archive.writestr("manifest.yaml", manifest)
        archive.writestr(entry, "Name: t.evil.E\n")
    (problem,) = PackageLoader([tmp_path], INTERPRETER).problems
    assert str(problem) == (f"{tmp_path / 'evil.zip'}: broken package zip: the package has "
                            f"a path outside the package: {entry!r}")


def test_a_class_path_leaving_a_folder_package_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.yaml").write_text("Name: t.evil.E\n")
    write_package(tmp_path / "pkgs", "t.evil",
                  manifest="Format: 1.4\nFullName: t.evil\nClasses:\n"
                           "  t.evil.E: ../../../secret.yaml\n")
    package = PackageLoader([tmp_path / "pkgs"], INTERPRETER).find_package("t.evil")
    with pytest.raises(LoadError, match="leaves the package"):
        package.load_class("t.evil.E")


def test_resources_cannot_leave_the_package(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("secret")
    write_package(tmp_path / "pkgs", "t.res", {"R": class_text("t.res", "R", """
        Methods:
          read:
            Body:
              - Return: sys:Resources.string('../../../secret.txt')
    """, sys="io.murano.system")})
    with pytest.raises(LoadError, match="leaves the package"):
        run_method([tmp_path / "pkgs"], "t.res.R.read")


@pytest.mark.parametrize(("manifest", "problem"), [
    ("Format: 1.4\nClasses: {}\n", "FullName is required"),
    ("Format: 1.4\nFullName: 'a b!'\n", "FullName 'a b!' must be dotted words"),
    ("Format: 1.4\nFullName: t.m\nType: Service\n", "Type must be Application or Library"),
    ("Format: 1.4\nFullName: t.m\nClasses: [A.yaml]\n", "Classes must be a mapping"),
    ("Format: 1.4\nFullName: t.m\nRequire: t.other\n", "Require must be a mapping"),
    ("Format: 1.4\nFullName: t.m\nTags: web\n", "Tags must be a list"),
    ("Format: 9.9\nFullName: t.m\n", "unsupported MuranoPL format 9.9"),
    ("Format: Heat.HOT/1.0\nFullName: t.m\n", "a Heat.HOT package needs template.yaml"),
    ("Format: Heat.HOT/2.0\nFullName: t.m\n", "unsupported package format"),
    ("Format: Other/1.0\nFullName: t.m\n", "unsupported package format"),
    ("Format: MuranoPL/one\nFullName: t.m\n", "invalid Format"),
    ("- just\n- a list\n", "manifest must be a mapping"),
    ("FullName: [unclosed\n", "malformed YAML"),
])
def test_manifest_problems_name_the_manifest(tmp_path: Path, manifest: str,
                                             problem: str) -> None:
    path = write_package(tmp_path, "t.m", manifest=manifest, folder="m")
    with pytest.raises(LoadError) as caught:
        PackageLoader([], INTERPRETER).add(path)
    assert problem in str(caught.value)
    where = str(path / "manifest.yaml")
    reported = caught.value.problems if isinstance(caught.value, LoadErrors) else [caught.value]
    assert all(p.file == where for p in reported)
    assert where in str(caught.value)


def test_all_manifest_problems_are_reported_together(tmp_path: Path) -> None:
    path = write_package(tmp_path, "t.m", folder="m",
                         manifest="Type: Service\nClasses: [x]\nTags: 1\n")
    with pytest.raises(LoadErrors) as caught:
        PackageLoader([], INTERPRETER).add(path)
    assert len(caught.value.problems) == 4


def test_a_bad_package_does_not_hide_the_good_ones(tmp_path: Path) -> None:
    write_package(tmp_path, "t.bad", manifest="Format: 7\n", folder="bad")
    app_package(tmp_path)
    loader = PackageLoader([tmp_path], INTERPRETER)
    assert len(loader.problems) == 1
    assert "t.app" in loader.packages


@pytest.mark.parametrize(("version", "spec", "matches"), [
    ("0.0.0", "", True), ("0.5.1", "", True), ("1.0.0", "", False), ("0.9.9", None, True),
    ("1.0.0", "1", True), ("1.9.3", "1", True), ("2.0.0", "1", False), ("0.9.0", "1", False),
    ("1.2.0", ">=1.2,<2", True), ("1.9.9", ">=1.2, <2", True), ("1.1.9", ">=1.2,<2", False),
    ("2.0.0", ">=1.2,<2", False),
    ("0.0.1", "*", True), ("7.3.0", "*", True),
    ("1.2.3", "==1.2.3", True), ("1.2.4", "==1.2.3", False), ("1.2.4", "1.2", True),
    ("1.3.0", "1.2", False), ("1.2.3", "!=1.2.3", False), ("2.0.0", ">1", True),
    ("1.5.0", ">1", False), ("1.5.0", "<=1", True),
])
def test_version_specs(version: str, spec: str | None, matches: bool) -> None:
    assert version_matches(parse_version(version), spec) is matches


def test_versions_are_coerced() -> None:
    assert str(parse_version("1")) == "1.0.0"
    assert str(parse_version(2.1)) == "2.1.0"
    assert str(parse_version(None)) == "0.0.0"


def test_an_invalid_version_spec_is_a_load_error() -> None:
    with pytest.raises(LoadError, match="invalid version spec"):
        version_matches(parse_version("1.0.0"), ">=abc")


def lib_package(root: Path, version: str) -> Path:
    return write_package(root, "t.lib", {"Lib": class_text("t.lib", "Lib", f"""
        Methods:
          which:
            Usage: Static
            Body:
              - Return: '{version}'
    """)}, version=version, folder=f"lib-{version}", fmt="1.4")


@pytest.mark.parametrize(("spec", "expected"), [
    ("1", "1.4.0"), ("2", "2.0.1"), (">=1.2,<2", "1.4.0"), ("*", "2.0.1"), (">1", "2.0.1"),
])
def test_require_picks_the_matching_version_of_two(tmp_path: Path, spec: str,
                                                   expected: str) -> None:
    lib_package(tmp_path, "1.4.0")
    lib_package(tmp_path, "2.0.1")
    write_package(tmp_path, "t.user", {"User": class_text("t.user", "User", """
        Methods:
          run:
            Body:
              - Return: lib:Lib.which()
    """, lib="t.lib")}, require={"t.lib": spec})
    assert run_method([tmp_path], "t.user.User.run") == expected


def test_require_with_no_matching_version_names_what_is_there(tmp_path: Path) -> None:
    lib_package(tmp_path, "1.4.0")
    write_package(tmp_path, "t.user", {"User": class_text("t.user", "User", """
        Methods:
          run:
            Body:
              - Return: new('t.lib.Lib')
    """)}, require={"t.lib": "3"})
    with pytest.raises(errors.NoPackageFound) as caught:
        run_method([tmp_path], "t.user.User.run")
    message = str(caught.value)
    assert "t.lib" in message and "'3'" in message and "1.4.0" in message
    assert "required by t.user" in message


def test_no_class_found_lists_the_searched_packages(tmp_path: Path) -> None:
    lib_package(tmp_path, "1.4.0")
    write_package(tmp_path, "t.user", {"User": class_text("t.user", "User", """
        Methods:
          run:
            Body:
              - Return: new('t.nowhere.Thing')
    """)}, require={"t.lib": "1"}, version="0.3")
    with pytest.raises(errors.NoClassFound) as caught:
        run_method([tmp_path], "t.user.User.run")
    message = str(caught.value)
    assert "t.nowhere.Thing" in message
    for searched in ("t.user/0.3.0", "t.lib", "io.murano"):
        assert searched in message
    assert caught.value.murano_stack and caught.value.murano_stack[-1].method == "run"


def test_a_class_not_required_is_not_visible(tmp_path: Path) -> None:
    lib_package(tmp_path, "1.4.0")
    write_package(tmp_path, "t.user", {"User": class_text("t.user", "User", """
        Methods:
          run:
            Body:
              - Return: new('t.lib.Lib')
    """)})
    with pytest.raises(errors.NoClassFound, match="t.lib.Lib"):
        run_method([tmp_path], "t.user.User.run")


def test_inheritance_cycle_names_the_class_file(tmp_path: Path) -> None:
    path = write_package(tmp_path, "t.cyc", {
        "A": class_text("t.cyc", "A", "Extends: B\n"),
        "B": class_text("t.cyc", "B", "Extends: C\n"),
        "C": class_text("t.cyc", "C", "Extends: A\n"),
    })
    package = PackageLoader([tmp_path], INTERPRETER).find_package("t.cyc")
    with pytest.raises(LoadError) as caught:
        package.load_class("t.cyc.A")
    assert "inheritance cycle" in str(caught.value)
    assert caught.value.file == str(path / "Classes" / "A.yaml")


def test_a_class_extending_itself_is_a_cycle(tmp_path: Path) -> None:
    write_package(tmp_path, "t.cyc", {"A": class_text("t.cyc", "A", "Extends: A\n")})
    with pytest.raises(LoadError, match="inheritance cycle through class t.cyc.A"):
        PackageLoader([tmp_path], INTERPRETER).find_class("t.cyc.A")


def test_a_second_copy_of_a_package_is_a_problem_naming_the_one_used(tmp_path: Path) -> None:
    first = write_package(tmp_path, "t.dup", {"A": class_text("t.dup", "A", """
        Methods:
          run:
            Body:
              - Return: first
    """)}, folder="a")
    second = write_package(tmp_path, "t.dup", {"A": class_text("t.dup", "A", """
        Methods:
          run:
            Body:
              - Return: second
    """)}, folder="b")
    loader = PackageLoader([tmp_path], INTERPRETER)
    assert [str(p) for p in loader.problems] == [
        f"{second}: package t.dup 0.0.0 is also at {first}, which is the one used"]
    assert run_method([tmp_path], "t.dup.A.run") == "first"
    assert not PackageLoader([first, first], INTERPRETER).problems  # the same folder twice


def test_unknown_parent_and_unknown_prefix_name_the_extends_line(tmp_path: Path) -> None:
    path = write_package(tmp_path, "t.ext", {
        "A": class_text("t.ext", "A", "Extends: Missing\n"),
        "B": class_text("t.ext", "B", "Extends: zz:Base\n"),
    })
    loader = PackageLoader([tmp_path], INTERPRETER)
    with pytest.raises(LoadError) as caught:
        loader.find_class("t.ext.A")
    assert str(caught.value).startswith(f"{path / 'Classes' / 'A.yaml'}:4:10: ")
    assert "t.ext.Missing" in str(caught.value)
    with pytest.raises(LoadError) as caught:
        loader.find_class("t.ext.B")
    assert str(caught.value).startswith(f"{path / 'Classes' / 'B.yaml'}:4:10")
    assert "unknown namespace prefix 'zz'" in str(caught.value)


def test_class_level_problems_name_the_line_of_their_value(tmp_path: Path) -> None:
    """Plain scalars carry no position: the error's line is found in the file."""
    path = write_package(tmp_path, "t.at", {
        "A": class_text("t.at", "A", "Extends:\n  - io.murano.Object\n  - Nowhere\n"),
        "B": class_text("t.at", "B", "Usage: Klass\n"),
        "C": "Namespaces:\n  =: t.at\n---\nName: Other\n---\nName: C\n\n"
             "Methods: [run]\n",
    })
    (tmp_path / "zipped").mkdir()
    packed = zip_folder(path, tmp_path / "zipped" / "t.at.zip")
    expected = {"t.at.A": ("A", "6:5: class t.at.Nowhere is not found"),
                "t.at.B": ("B", "4:8: class t.at.B: unknown Usage 'Klass'"),
                "t.at.C": ("C", "8:10: class t.at.C: Methods must be a mapping")}
    for root, shown in ((tmp_path, f"{path / 'Classes'}/"), (packed.parent, f"{packed}!Classes/")):
        loader = PackageLoader([root], INTERPRETER)
        for name, (short, where) in expected.items():
            with pytest.raises(LoadError) as caught:
                loader.find_class(name)
            assert str(caught.value).startswith(f"{shown}{short}.yaml:{where}")


def test_a_file_that_does_not_define_its_class(tmp_path: Path) -> None:
    path = write_package(tmp_path, "t.x", {"A": class_text("t.x", "Other", "")})
    with pytest.raises(LoadError) as caught:
        PackageLoader([tmp_path], INTERPRETER).find_class("t.x.A")
    assert "class t.x.A is not defined in this file" in str(caught.value)
    assert caught.value.file == str(path / "Classes" / "A.yaml")


def test_a_missing_package_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match="does not exist"):
        PackageLoader([tmp_path / "nope"], INTERPRETER)


def test_a_symlink_out_of_a_folder_package_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("secret")
    path = write_package(tmp_path / "pkgs", "t.res", {"R": class_text("t.res", "R", """
        Methods:
          read:
            Body:
              - Return: sys:Resources.string('link.txt')
    """, sys="io.murano.system")})
    (path / "Resources").mkdir()
    (path / "Resources" / "link.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(LoadError, match="leaves the package"):
        run_method([tmp_path / "pkgs"], "t.res.R.read")


def test_a_symlinked_folder_out_of_a_folder_package_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "link.txt").write_text("secret")
    path = write_package(tmp_path / "pkgs", "t.res", {"R": class_text("t.res", "R", """
        Methods:
          read:
            Body:
              - Return: sys:Resources.string('link.txt')
    """, sys="io.murano.system")})
    (path / "Resources").symlink_to(tmp_path / "outside", target_is_directory=True)
    with pytest.raises(LoadError, match="leaves the package"):
        run_method([tmp_path / "pkgs"], "t.res.R.read")


def test_a_folder_deeper_in_a_package_linked_out_or_in_is_checked_whole(tmp_path: Path) -> None:
    """A symlink anywhere below the package's folder is resolved: one pointing out is
    refused however deep, one pointing to another folder of the package is read, and a
    package reached through a symlinked folder reads as from its own."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "b.txt").write_text("secret")
    path = write_package(tmp_path / "pkgs", "t.res", {"R": class_text("t.res", "R", """
        Methods:
          read:
            Arguments:
              - name: {Contract: $.string()}
            Body:
              - Return: sys:Resources.string($name)
    """, sys="io.murano.system")})
    (path / "Resources" / "kept").mkdir(parents=True)
    (path / "Resources" / "kept" / "b.txt").write_text("kept")
    (path / "Resources" / "out").symlink_to(tmp_path / "outside", target_is_directory=True)
    (path / "Resources" / "in").symlink_to(path / "Resources" / "kept",
                                           target_is_directory=True)
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "t.res").symlink_to(path, target_is_directory=True)
    for root in (tmp_path / "pkgs", tmp_path / "linked"):
        assert run_method([root], "t.res.R.read", name="kept/b.txt") == "kept"
        assert run_method([root], "t.res.R.read", name="in/b.txt") == "kept"
        with pytest.raises(LoadError, match="leaves the package"):
            run_method([root], "t.res.R.read", name="out/b.txt")


def test_the_loaders_resolver_resolves_as_realpath_does(tmp_path: Path) -> None:
    """Folders resolved parent by parent (each once) come out as ``os.path.realpath``
    has them, through symlinked parents, links to links, relative paths and ``..``."""
    from murano_engine.dsl.packages import Resolver
    (tmp_path / "real" / "a" / "b").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    (tmp_path / "real" / "a" / "up").symlink_to("..", target_is_directory=True)
    (tmp_path / "chain").symlink_to(tmp_path / "link", target_is_directory=True)
    resolve = Resolver()
    for path in ["real/a/b", "link/a/b", "chain/a", "link/a/up/a/b", "real/a/missing",
                 ".", "link/../real/a"]:
        full = os.path.join(tmp_path, path)
        assert resolve(os.path.normpath(full)) == os.path.realpath(os.path.normpath(full)), path


def test_a_yaml_resource_parsed_by_an_earlier_process_is_read_back_without_yaml(
        tmp_path: Path) -> None:
    """Execution plan templates are YAML resources: a process after the first reads them
    from the document cache, importing no YAML parser; a changed file is parsed anew."""
    import subprocess
    import sys

    path = write_package(tmp_path / "pkgs", "t.yres", {"R": class_text("t.yres", "R", """
        Methods:
          read:
            Usage: Static
            Body:
              - Return: sys:Resources.yaml('plan.yaml').Body
    """, sys="io.murano.system")})
    (path / "Resources").mkdir()
    plan = path / "Resources" / "plan.yaml"
    plan.write_text("Body:\n  name: plan\n  items: [1, 2]\n")
    probe = ("import sys\n"
             "from pathlib import Path\n"
             "from tests.dsl.dsl_helpers import run_method\n"
             f"body = run_method([Path({str(tmp_path / 'pkgs')!r})], 't.yres.R.read')\n"
             "print(dict(body), 'yaml' in sys.modules)\n")

    def run() -> str:
        return subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True,
            cwd=Path(__file__).resolve().parents[2],
            env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))).stdout.strip()

    assert run() == "{'name': 'plan', 'items': (1, 2)} True"  # (the class file too)
    assert run() == "{'name': 'plan', 'items': (1, 2)} False"
    plan.write_text("Body:\n  name: new\n")
    assert run() == "{'name': 'new'} True"


def test_a_resource_read_again_is_the_file_as_written_whatever_was_done_to_the_first(
        tmp_path: Path) -> None:
    """A YAML or JSON resource is parsed once and shared between reads (a deployment
    reads the same plan template for each server): a read changed in MuranoPL leaves the
    next read as the file is, and a changed file is read anew."""
    path = write_package(tmp_path / "pkgs", "t.res", {"R": class_text("t.res", "R", """
        Methods:
          twice:
            Arguments:
              - name: {Contract: $.string()}
            Body:
              - $first: sys:Resources.yaml($name)
              - $first.Body.items: $first.Body.items + [3]
              - $first.Body.name: changed
              - $second: sys:Resources.yaml($name)
              - Return: [$first.Body, $second.Body]
    """, sys="io.murano.system")})
    (path / "Resources").mkdir()
    (path / "Resources" / "plan.yaml").write_text("Body:\n  name: plan\n  items: [1, 2]\n")
    (path / "Resources" / "plan.json").write_text('{"Body": {"name": "json", "items": [1]}}')
    first, second = run_method([tmp_path / "pkgs"], "t.res.R.twice", name="plan.yaml")
    assert (dict(first), dict(second)) == ({"name": "changed", "items": (1, 2, 3)},
                                           {"name": "plan", "items": (1, 2)})
    first, second = run_method([tmp_path / "pkgs"], "t.res.R.twice", name="plan.json")
    assert dict(second) == {"name": "json", "items": (1,)}
    (path / "Resources" / "plan.yaml").write_text("Body:\n  name: new\n  items: []\n")
    _, second = run_method([tmp_path / "pkgs"], "t.res.R.twice", name="plan.yaml")
    assert dict(second) == {"name": "new", "items": ()}


@pytest.mark.parametrize("text", [None, "0", "1", "1.2", "1.2.3", "01.002.3", "10.0.0",
                                  "1.2.3-rc1", "1.2-beta", "2.0.0+build.7", "3.1.4.1", "1.x"])
def test_a_versions_key_is_what_semantic_version_reads(text: str | None) -> None:
    from murano_engine.dsl.packages import version_key
    version = parse_version(text)
    assert version_key(text) == (version.major, version.minor, version.patch)


@pytest.mark.parametrize("text", ["", "x", "-1", "1..2", "²"])
def test_a_version_semantic_version_refuses_is_refused(text: str) -> None:
    from murano_engine.dsl.packages import version_key
    with pytest.raises(ValueError):
        parse_version(text)
    with pytest.raises(ValueError):
        version_key(text)


def test_versions_of_a_package_order_and_match_as_their_full_versions(tmp_path: Path) -> None:
    """Plain versions and pre-releases side by side: the newest release first, a
    pre-release below its release, ``1.0`` the same package as ``1.0.0``."""
    for folder, version in [("a", "1.0"), ("b", "1.0.0"), ("c", "2.0.0-rc1"), ("d", "2.0.0"),
                            ("e", "1.5")]:
        write_package(tmp_path, "t.multi", {"C": class_text("t.multi", "C", "")},
                      version=version, folder=folder)
    loader = PackageLoader([tmp_path], INTERPRETER)
    assert [str(p.version) for p in loader.packages["t.multi"]] == \
        ["2.0.0", "2.0.0-rc1", "1.5.0", "1.0.0"]
    assert str(loader.find_package("t.multi", "<2").version) == "1.5.0"
    assert str(loader.find_package("t.multi", ">=2.0.0").version) == "2.0.0"


def test_plain_versions_are_sorted_newest_first_without_semantic_version(
        tmp_path: Path) -> None:
    for folder, version in [("a", "1.10"), ("b", "1.9"), ("c", "2"), ("d", None)]:
        write_package(tmp_path, "t.plain", {"C": class_text("t.plain", "C", "")},
                      version=version, folder=folder)
    probe = ("import sys\n"
             "from murano_engine.dsl.packages import PackageLoader\n"
             "from murano_engine.engine.interpreter import build_interpreter\n"
             "loader = PackageLoader([sys.argv[1]], build_interpreter())\n"
             "keys = [p.version_key for p in loader.packages['t.plain']]\n"
             "loader.find_class('t.plain.C')\n"
             "print(keys, 'semantic_version' in sys.modules)\n")
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True,
                          text=True, check=True)
    assert done.stdout.split("]")[1].split() == ["False"]
    assert done.stdout.startswith("[(2, 0, 0), (1, 10, 0), (1, 9, 0), (0, 0, 0)]")


@pytest.mark.parametrize("text", [None, "0", "1", "1.2", "01.002.3", "1.2.3-rc1", "2.0.0+b.7"])
def test_a_packages_version_string_is_its_full_versions(tmp_path: Path, text: str | None
                                                        ) -> None:
    write_package(tmp_path, "t.vs", {"C": class_text("t.vs", "C", "")}, version=text)
    package = PackageLoader([tmp_path], INTERPRETER).packages["t.vs"][0]
    assert package.version_string == str(parse_version(text))


def test_a_plugin_class_is_found_by_its_older_name_and_a_missing_one_named_as_asked(
        tmp_path: Path) -> None:
    """``io.murano.extensions.NAME`` falls back to ``NAME`` (plugins' older naming), as
    in Murano; when neither exists the error names the class as the code wrote it."""
    write_package(tmp_path, "t.plugin", {
        "Tool": class_text("t.plugin", "Tool", """
            Methods:
              name:
                Body:
                  - Return: tool
            """),
        "User": class_text("t.plugin", "User", """
            Methods:
              found:
                Usage: Static
                Body:
                  - Return: new('io.murano.extensions.t.plugin.Tool').name()
              missing:
                Usage: Static
                Body:
                  - Return: new('io.murano.extensions.t.plugin.Gone')
            """)})
    assert run_method([tmp_path], "t.plugin.User.found") == "tool"
    with pytest.raises(errors.NoClassFound, match=r"io\.murano\.extensions\.t\.plugin\.Gone "):
        run_method([tmp_path], "t.plugin.User.missing")
