"""Interpreters are values: two with different native classes and functions live side by
side (that ``dsl/`` imports nothing above it is checked in tests/test_import_boundaries.py)."""

from __future__ import annotations

import pytest
from dsl_helpers import write_package
from yaql.language.exceptions import NoFunctionRegisteredException

from murano_engine.dsl.executor import Executor
from murano_engine.dsl.natives import NativeCall, NativeRegistry, native_class, static
from murano_engine.dsl.packages import PackageLoader
from murano_engine.dsl.runtime import FunctionSpec
from murano_engine.engine.interpreter import build_interpreter

CLASS = """
    Namespaces:
      =: t.twin
    Name: Greeter
    Methods:
      greet:
        Usage: Static
      viaFunction:
        Usage: Static
        Body:
          - Return: shout('hi')
"""


@native_class("t.twin.Greeter")
class English:
    @static
    def greet(call: NativeCall) -> str:
        return "hello"


@native_class("t.twin.Greeter")
class French:
    @static
    def greet(call: NativeCall) -> str:
        return "bonjour"


def _run(loader: PackageLoader, method: str) -> object:
    executor = Executor(loader)
    cls = loader.find_class("t.twin.Greeter")
    return executor.call(cls.ref, method)


def test_two_interpreters_with_different_natives_and_functions_in_one_process(tmp_path):
    write_package(tmp_path, "t.twin", {"Greeter": CLASS})
    english = build_interpreter(natives=[English], functions={
        "shout": FunctionSpec(lambda ctx, text: text.upper() + "!")})
    french = build_interpreter(natives=[French], functions={
        "shout": FunctionSpec(lambda ctx, text: text + " !!")})
    english_loader = PackageLoader([tmp_path], english)
    french_loader = PackageLoader([tmp_path], french)
    # Interleaved, so neither run can leave state behind for the other.
    assert _run(english_loader, "greet") == "hello"
    assert _run(french_loader, "greet") == "bonjour"
    assert _run(english_loader, "viaFunction") == "HI!"
    assert _run(french_loader, "viaFunction") == "hi !!"
    assert _run(english_loader, "greet") == "hello"
    # The standard interpreter knows neither the native class nor the function.
    plain = PackageLoader([tmp_path], build_interpreter())
    with pytest.raises(NoFunctionRegisteredException, match='"shout"'):
        _run(plain, "viaFunction")
    assert plain.find_class("t.twin.Greeter").find_method("greet").native is None


def test_a_registry_takes_only_marked_classes():
    class Unmarked:
        pass

    registry = NativeRegistry([English])
    assert registry.get("t.twin.Greeter") is English
    with pytest.raises(TypeError, match="Unmarked"):
        registry.add(Unmarked)
