"""What runs are built from: the native classes, and the runtime, made when first used.

A :class:`~murano_engine.dsl.packages.PackageLoader` made with an interpreter
attaches its native classes to the classes it builds, and every executor of that
loader runs with its runtime. Loading classes needs only the natives: the runtime
(Murano's function tables, and with them yaql and the compiler) is made by the first
executor or check that asks for it. Interpreters are built in one place,
``murano_engine.engine.interpreter``; nothing here is global.
"""

from __future__ import annotations

from collections.abc import Callable

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from murano_engine.dsl.natives import NativeRegistry
    from murano_engine.dsl.runtime import Runtime


class Interpreter:
    """Native classes and a runtime (or what makes it, called once, on first use)."""

    __slots__ = ("natives", "_runtime", "_make_runtime")

    def __init__(self, natives: NativeRegistry,
                 runtime: Runtime | Callable[[], Runtime]) -> None:
        self.natives = natives
        if callable(runtime):
            self._runtime, self._make_runtime = None, runtime
        else:
            self._runtime, self._make_runtime = runtime, None

    @property
    def runtime(self) -> Runtime:
        runtime = self._runtime
        if runtime is None:
            # Two threads asking at once may each make one; the first kept is the one
            # every later reader gets (making one has no other effect).
            made = self._make_runtime()  # type: ignore[misc]
            runtime = self._runtime = self._runtime or made
        return runtime

    def warm(self) -> None:
        """Import every native class's module and make the runtime now: a long-lived
        process (murano-api, a worker) does so at its start, so tasks running side by
        side never import them at once (a concurrent circular import hands one of them
        a module half made)."""
        self.natives.import_all()
        self.runtime  # noqa: B018 - made on first read
