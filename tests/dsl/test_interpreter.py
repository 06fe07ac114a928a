"""Interpreters are values: two with different native classes and functions live side by side,
and the interpreter package (``dsl/``) imports nothing above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from dsl_helpers import write_package
from yaql.language.exceptions import NoFunctionRegisteredException

from murano_engine.dsl.executor import Executor
from murano_engine.dsl.natives import NativeCall, NativeRegistry, native_class, static
from murano_engine.dsl.packages import PackageLoader
from murano_engine.dsl.runtime import FunctionSpec
from murano_engine.interpreter import build_interpreter

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "murano_engine"

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


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports in functions included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_the_interpreter_imports_nothing_above_it():
    """``dsl/`` may use the engine's lowest modules (boundary, concurrency), never the
    system classes, tasks, the API or the clouds, so no import cycle runs through it."""
    allowed = {"murano_engine.dsl", "murano_engine.boundary", "murano_engine.concurrency"}
    offenders = []
    for path in sorted((PACKAGE_ROOT / "dsl").rglob("*.py")):
        for name in _imports(path):
            if name == "murano_engine" or not name.startswith("murano_engine."):
                continue
            if not any(name == a or name.startswith(a + ".") for a in allowed):
                offenders.append(f"{path.relative_to(PACKAGE_ROOT)}: {name}")
    assert offenders == []
    for low in ("boundary.py", "concurrency.py"):
        assert not {n for n in _imports(PACKAGE_ROOT / low) if n.startswith("murano_engine.")
                    and n not in ("murano_engine.boundary", "murano_engine.concurrency")}


def test_the_checks_see_lazy_imports(tmp_path):
    """The walker finds an import hidden in a function body (so the check above can fail)."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from murano_engine.system import agent\n")
    assert "murano_engine.system" in _imports(module)
