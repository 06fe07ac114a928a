"""Class config files: Config properties and defaults from ``[engine] class_configs``."""

from __future__ import annotations

import json
import textwrap

import pytest

from murano_engine.dsl import errors
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.class_configs import ClassConfigFiles
from murano_engine.engine.interpreter import build_interpreter

CLASS = """
Name: t.cfg.Service
Properties:
  endpoint:
    Contract: $.string().notNull()
    Usage: Config
  retries:
    Contract: $.int()
    Default: 1
  name:
    Contract: $.string()
    Default: plain
Methods:
  describe:
    Body:
      - Return: format('{0} {1} {2}', $.endpoint, $.retries, $.name)
"""


def _loader(tmp_path, version="1.2.3"):
    package = tmp_path / "pkgs" / "t.cfg"
    (package / "Classes").mkdir(parents=True)
    (package / "manifest.yaml").write_text(
        f"Format: 1.4\nType: Library\nFullName: t.cfg\nVersion: {version}\n"
        "Classes:\n  t.cfg.Service: Service.yaml\n")
    (package / "Classes" / "Service.yaml").write_text(textwrap.dedent(CLASS))
    return PackageLoader([tmp_path / "pkgs"], build_interpreter())


def _describe(loader, folder, props=None):
    executor = Executor(loader, services={"class_configs": ClassConfigFiles(folder)})
    cls = loader.find_class("t.cfg.Service")
    return executor.call(executor.new_object(cls, props=props or {}), "describe")


def test_config_values_and_defaults_from_most_specific_file(tmp_path):
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "t.cfg.Service-1.json").write_text(json.dumps({"endpoint": "major", "retries": 9}))
    (configs / "t.cfg.Service-1.2.yaml").write_text("endpoint: minor\nretries: 5\n")
    loader = _loader(tmp_path)
    assert _describe(loader, configs) == "minor 5 plain"
    assert _describe(loader, configs, {"retries": 2, "endpoint": "ignored"}) == "minor 2 plain"


def test_unversioned_file_only_for_major_zero(tmp_path):
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "t.cfg.Service.json").write_text(json.dumps({"endpoint": "zero"}))
    assert _describe(_loader(tmp_path, "0.4.0"), configs) == "zero 1 plain"
    other = tmp_path / "other"
    other.mkdir()
    (other / "t.cfg.Service.json").write_text(json.dumps({"endpoint": "zero"}))
    # The file does not apply to 1.0.0: the Config property stays null.
    with pytest.raises(errors.ContractViolationException, match=r"t\.cfg\.Service\.endpoint"):
        _describe(_loader(other, "1.0.0"), other)
