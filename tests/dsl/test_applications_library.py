"""io.murano.applications, the application development framework in meta/.

Its MuranoPL tests (replica providers, server groups, events, the software
component lifecycle and the base applications) run here one pytest item each;
the other tests check that it is part of the core library: found with no
``-l`` folder, trusted, its names reserved, and usable by a package that
requires it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from murano_engine.cli.test_runner import find_tests, mocking_interpreter, run_test
from murano_engine.dsl import errors
from murano_engine.dsl.packages import META_DIR, PackageLoader, core_package_names
from murano_engine.dsl.validation import validate_package
from tests.dsl.dsl_helpers import class_text, write_package

NAME = "io.murano.applications"
LOADER = PackageLoader([], mocking_interpreter())
CASES = find_tests(LOADER, NAME)
PUBLIC_CLASSES = [
    "ReplicaProvider", "ReplicationGroup", "CloneReplicaProvider", "CompositeReplicaProvider",
    "PoolReplicaProvider", "RoundrobinReplicaProvider", "Event", "ServerGroup", "ServerList",
    "CompositeServerGroup", "SingleServerGroup", "ServerReplicationGroup",
    "TemplateServerProvider", "Installable", "Configurable", "OpenStackSecurityConfigurable",
    "SoftwareComponent", "SingleServerApplication", "MultiServerApplication",
    "MultiServerApplicationWithScaling",
]


@pytest.mark.parametrize(("cls", "method"), CASES, ids=[f"{c.name}.{m.name}" for c, m in CASES])
def test_muranopl(cls, method):
    result = run_test(LOADER, cls, method)
    assert result.passed, result.detail


def test_every_area_has_tests():
    fixtures = {cls.name.rsplit(".", 1)[-1] for cls, _ in CASES}
    assert {"TestReplicationGroup", "TestPoolReplicaProvider", "TestRoundrobinReplicaProvider",
            "TestCompositeReplicaProvider", "TestCloneReplicaProvider", "TestEvents",
            "TestServerGroups", "TestSoftwareComponent", "TestApplications"} <= fixtures
    assert len(CASES) >= 50


def test_it_is_part_of_the_core_library():
    package = LOADER.find_package(NAME)
    assert package.trusted
    assert NAME in core_package_names()
    assert package.format == (1, 4)
    for short in PUBLIC_CLASSES:
        cls = LOADER.find_class(f"{NAME}.{short}")
        assert cls.package is package
        assert "io.murano.Object" in {a.name for a in cls.ancestors()}
    assert validate_package(Path(META_DIR, NAME), LOADER.interpreter, []) == []


def test_the_base_classes_are_what_applications_extend():
    def ancestors(short: str) -> set[str]:
        return {a.name for a in LOADER.find_class(f"{NAME}.{short}").ancestors()}

    assert {"io.murano.Application", f"{NAME}.SoftwareComponent", f"{NAME}.Installable",
            f"{NAME}.Configurable"} <= ancestors("SingleServerApplication")
    assert f"{NAME}.MultiServerApplication" in ancestors("MultiServerApplicationWithScaling")
    assert {f"{NAME}.ReplicationGroup", f"{NAME}.ServerGroup"} <= ancestors(
        "ServerReplicationGroup")
    assert f"{NAME}.ReplicaProvider" in ancestors("TemplateServerProvider")
    scaling = LOADER.find_class(f"{NAME}.MultiServerApplicationWithScaling")
    assert {m: scaling.find_method(m).scope for m in ("scaleOut", "scaleIn")} == {
        "scaleOut": "Public", "scaleIn": "Public"}


def test_a_package_requiring_it_loads_without_a_folder_for_it(tmp_path: Path):
    text = class_text("t.user", "Web", """
        Extends: apps:SingleServerApplication
        Methods:
          onInstallServer:
            Arguments:
              - server:
                  Contract: $
              - serverGroup:
                  Contract: $
            Body:
              - Return: null
        """, apps=NAME)
    path = write_package(tmp_path, "t.user", {"Web": text}, require={NAME: ""})
    loader = PackageLoader([tmp_path], mocking_interpreter())
    web = loader.find_class("t.user.Web")
    assert f"{NAME}.SoftwareComponent" in {a.name for a in web.ancestors()}
    assert validate_package(path, loader.interpreter, [tmp_path]) == []


def test_a_package_elsewhere_cannot_take_its_name(tmp_path: Path):
    write_package(tmp_path, NAME, {"Event": class_text(NAME, "Event", "Methods: {}\n")},
                  version="1.0.0")
    loader = PackageLoader([tmp_path], mocking_interpreter())
    assert any("reserved" in str(p) for p in loader.problems)
    assert loader.find_package(NAME).trusted
    with pytest.raises(errors.NoPackageFound):
        loader.find_package(NAME, "1.0")
