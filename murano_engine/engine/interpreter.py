"""Building the interpreter: the one place native classes and functions come together.

Everything that runs MuranoPL (the CLI, the test runner, engine tasks, the
API, the tests) builds its :class:`~murano_engine.dsl.interpreter.Interpreter`
here and hands it to the loaders it makes; nothing is registered globally.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from murano_engine import system
from murano_engine.dsl.interpreter import Interpreter
from murano_engine.dsl.natives import NativeRegistry

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from murano_engine.dsl.runtime import FunctionSpec, Runtime


def build_interpreter(natives: Iterable[type] = (),
                      functions: Mapping[str, FunctionSpec] | None = None) -> Interpreter:
    """The core library's native classes and Murano's functions, plus ``natives`` and
    ``functions`` (which replace those of the same name). The functions' runtime is
    made when first used: loading classes needs none of it."""
    registry = NativeRegistry()
    system.register(registry)
    for py_class in natives:
        registry.add(py_class)
    extra = dict(functions or {})

    def make_runtime() -> Runtime:
        from murano_engine.dsl import library
        from murano_engine.dsl.runtime import Runtime
        table = library.functions()
        table.update(extra)
        return Runtime(table, library.contract_functions())

    return Interpreter(registry, make_runtime)
