"""What a run writes back (the object model) and what Config properties start with."""

from __future__ import annotations

from pathlib import Path

import pytest
from dsl_helpers import class_text, write_package

from murano_engine.dsl import errors, serializer
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.model import load_model
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.interpreter import build_interpreter

APP = class_text("t.write", "App", """
    Properties:
      made:
        Contract: $.class(Part)
        Usage: Out
      alsoMade:
        Contract: $.class(Part)
        Usage: Out
      port:
        Contract: $.int()
        Usage: Config
        Default: 80
    Methods:
      make:
        Body:
          - $.made: new(Part, label => fresh)
          - $.alsoMade: $.made
      restart:
        Scope: Public
        Meta:
          - io.murano.metadata.Title:
              text: Restart it
          - io.murano.metadata.Description:
              text: Stops and starts the service
          - io.murano.metadata.HelpText:
              text: Takes a minute
      plain:
        Scope: Public
      hidden:
        Body:
          - Return: 1
    """)
PART = class_text("t.write", "Part", """
    Properties:
      label:
        Contract: $.string()
    """)


@pytest.fixture
def loader(tmp_path: Path) -> PackageLoader:
    write_package(tmp_path, "t.write", {"App": APP, "Part": PART})
    return PackageLoader([tmp_path], build_interpreter())


def _app(loader: PackageLoader, configured: dict | None = None, **props):
    configs = {"t.write.App": configured or {}}
    executor = Executor(loader, services={"class_configs": lambda cls: configs.get(cls.name, {})})
    return executor.new_object(loader.find_class("t.write.App"), props=props)


def test_actions_carry_title_description_and_help_from_method_metadata(loader):
    app = _app(loader)
    actions = serializer.serialize_model(app)["Objects"]["?"]["_actions"]
    by_name = {entry["name"]: entry for entry in actions.values()}
    assert set(by_name) == {"restart", "plain"}
    assert by_name["restart"] == {"name": "restart", "enabled": True, "title": "Restart it",
                                  "description": "Stops and starts the service",
                                  "helpText": "Takes a minute"}
    assert by_name["plain"] == {"name": "plain", "enabled": True, "title": "plain"}
    assert f"{app.id}_restart" in actions


def test_unowned_object_in_an_out_property_is_written_in_full_once(loader):
    app = _app(loader)
    app.executor.call(app, "make")
    made = app.props["made"]
    assert made.owner is None
    model = serializer.serialize_model(app)
    written = model["Objects"]["made"]
    assert written["?"]["id"] == made.id and written["label"] == "fresh"
    assert model["Objects"]["alsoMade"] == made.id
    # Loaded again, the holder owns it.
    executor = Executor(app.executor.loader)
    again = load_model(executor, model)
    assert again.props["made"].owner is again
    assert again.props["alsoMade"] is again.props["made"]


def test_config_property_takes_the_configured_value_else_its_default(loader):
    assert _app(loader).props["port"] == 80
    assert _app(loader, {"port": "8080"}).props["port"] == 8080
    # A Config property is never read from the model.
    assert _app(loader, port=1).props["port"] == 80


def test_malformed_dict_contract_is_a_contract_syntax_error_naming_its_place(tmp_path):
    bad = class_text("t.bad", "Bad", """
        Methods:
          take:
            Arguments:
              - v:
                  Contract:
                    $.int(): $.string()
                    $.string(): $.int()
        """)
    write_package(tmp_path, "t.bad", {"Bad": bad})
    loader = PackageLoader([tmp_path], build_interpreter())
    executor = Executor(loader)
    obj = executor.new_object(loader.find_class("t.bad.Bad"))
    with pytest.raises(errors.DslContractSyntaxError) as raised:
        executor.call(obj, "take", [{}])
    assert raised.value.murano_name == "murano.dsl.exceptions.DslContractSyntaxError"
    assert "Bad.yaml:" in str(raised.value) and "one expression key" in str(raised.value)
