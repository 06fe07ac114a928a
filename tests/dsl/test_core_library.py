"""The core library is the engine's own: its names are reserved, only it reads the engine's
configuration, and no package from a search folder takes its place."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from dsl_helpers import class_text, cli, run_method, write_package

from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import (
    META_DIR,
    PackageLoader,
    core_class_names,
    core_package_names,
)
from murano_engine.engine.interpreter import build_interpreter

SECRET = "db-password-s3cret"
CONFIG = {"database": {"connection": f"postgresql://murano:{SECRET}@db/murano"},
          "keystone_authtoken": {"password": SECRET}, "engine": {"home_region": "r1"}}
READ_SECRET = "config(database, connection)"


def _meta_manifests() -> list[dict]:
    return [yaml.safe_load((p / "manifest.yaml").read_text())
            for p in Path(META_DIR).iterdir() if (p / "manifest.yaml").is_file()]


def test_reserved_names_are_those_of_the_meta_folder():
    manifests = _meta_manifests()
    assert "io.murano" in core_package_names()
    assert core_package_names() == {m["FullName"] for m in manifests}
    assert core_class_names() == {c for m in manifests for c in m["Classes"]}
    assert "io.murano.Application" in core_class_names()


def _fake_core(root: Path) -> Path:
    """A copy of the core library, version 0.99.1, whose Application runs and leaks on .init."""
    fake = root / "io.murano"
    shutil.copytree(Path(META_DIR, "io.murano"), fake)
    manifest = (fake / "manifest.yaml").read_text()
    (fake / "manifest.yaml").write_text(manifest + "Version: 0.99.1\n")
    (fake / "Classes" / "Application.yaml").write_text(class_text("io.murano", "Application", f"""
        Methods:
          .init:
            Body:
              - Throw: Hijacked
                Message: format('HIJACKED {{0}}', {READ_SECRET})
          deploy:
    """))
    return fake


def _victim(root: Path) -> Path:
    return write_package(root, "t.victim", {"App": class_text("t.victim", "App", """
        Extends: res:Application
        Methods:
          run:
            Body:
              - Return: ok
    """, res="io.murano")})


def test_a_folder_package_named_io_murano_does_not_replace_the_core_library(tmp_path):
    _fake_core(tmp_path)
    _victim(tmp_path)
    loader = PackageLoader([tmp_path], build_interpreter())
    assert any("package name io.murano is reserved for the engine's core library" in str(p)
               for p in loader.problems)
    assert [str(p.version) for p in loader.packages["io.murano"]] == ["0.0.0"]
    core = loader.core()
    assert core.trusted
    assert Path(core.source.location).resolve() == Path(META_DIR, "io.murano").resolve()
    application = loader.find_class("io.murano.Application")
    assert application.package is core
    executor = Executor(loader, services={"config": CONFIG})
    assert run_method([], "t.victim.App.run", executor) == "ok"  # no Hijacked from .init


def test_a_package_may_not_define_a_core_class(tmp_path):
    write_package(tmp_path, "t.squat", manifest="""
        Format: 1.4
        FullName: t.squat
        Classes:
          io.murano.Environment: Environment.yaml
          t.squat.Other: Other.yaml
    """)
    loader = PackageLoader([tmp_path], build_interpreter())
    (problem,) = loader.problems
    assert "t.squat defines io.murano.Environment, reserved for the engine's core library" \
        in str(problem)
    assert "t.squat" not in loader.packages
    assert loader.find_class("io.murano.Environment").package.trusted


def test_the_core_library_reads_the_configuration():
    loader = PackageLoader([], build_interpreter())
    executor = Executor(loader, services={"config": CONFIG})
    env = executor.new_object(loader.find_class("io.murano.Environment"), props={"name": "e"})
    assert env.props["homeRegionName"] == "r1"  # Environment's .init calls config()


SPY_WAYS = {
    "method": """
        Methods:
          spy:
            Body:
              - Return: {read}
    """,
    "static method": """
        Methods:
          spy:
            Usage: Static
            Body:
              - Return: {read}
    """,
    ".init": """
        Properties:
          loot:
            Contract: $.string()
            Usage: Out
        Methods:
          .init:
            Body:
              - $.loot: {read}
          spy:
            Body:
              - Return: $.loot
    """,
    "property default": """
        Properties:
          loot:
            Contract: $.string()
            Default: {read}
        Methods:
          spy:
            Body:
              - Return: $.loot
    """,
    "contract": """
        Properties:
          loot:
            Contract: $.string().check({read} = null)
            Default: x
        Methods:
          spy:
            Body:
              - Return: $.loot
    """,
    "subclass of a core class": """
        Extends: res:Environment
        Methods:
          spy:
            Body:
              - Return: {read}
    """,
}


@pytest.mark.parametrize("way", sorted(SPY_WAYS))
def test_config_is_refused_to_other_packages(tmp_path, way):
    write_package(tmp_path, "t.spy", {"Spy": class_text(
        "t.spy", "Spy", SPY_WAYS[way].format(read=READ_SECRET), res="io.murano")})
    loader = PackageLoader([tmp_path], build_interpreter())
    executor = Executor(loader, services={"config": CONFIG})
    cls = loader.find_class("t.spy.Spy")
    with pytest.raises(Exception) as caught:  # noqa: PT011 - wrapped or not, by way
        receiver = cls.ref if way == "static method" else executor.new_object(
            cls, props={"name": "e"})
        executor.call(receiver, "spy")
    error = caught.value
    names = getattr(error, "names", None) or [getattr(error, "murano_name", "")]
    assert "murano.dsl.exceptions.PolicyViolationException" in names, repr(error)
    assert "config() is available to the engine's core library only" in str(error)
    assert SECRET not in str(error)


def test_murano_engine_run_keeps_the_core_library(tmp_path):
    """``murano-engine run -l``: a fake io.murano is reported and ignored, config() refused."""
    _fake_core(tmp_path)
    write_package(tmp_path, "t.victim", {"App": class_text("t.victim", "App", f"""
        Extends: res:Application
        Methods:
          run:
            Body:
              - Return: {READ_SECRET}
    """, res="io.murano")})
    done = cli("run", "-l", str(tmp_path), "t.victim.App.run")
    assert done.returncode != 0
    assert "package name io.murano is reserved for the engine's core library" in done.stderr
    assert "PolicyViolationException" in done.stderr and "Hijacked" not in done.stderr
