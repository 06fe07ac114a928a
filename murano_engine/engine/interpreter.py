"""Building the interpreter: the one place native classes and functions come together.

Everything that runs MuranoPL (the CLI, the test runner, engine tasks, the
API, the tests) builds its :class:`~murano_engine.dsl.runtime.Interpreter`
here and hands it to the loaders it makes; nothing is registered globally.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from murano_engine import system
from murano_engine.dsl import library
from murano_engine.dsl.natives import NativeRegistry
from murano_engine.dsl.runtime import FunctionSpec, Interpreter, Runtime


def build_interpreter(natives: Iterable[type] = (),
                      functions: Mapping[str, FunctionSpec] | None = None) -> Interpreter:
    """The core library's native classes and Murano's functions, plus ``natives`` and
    ``functions`` (which replace those of the same name)."""
    registry = NativeRegistry()
    system.register(registry)
    for py_class in natives:
        registry.add(py_class)
    table = library.functions()
    table.update(functions or {})
    return Interpreter(registry, Runtime(table, library.contract_functions()))
