"""Evaluation contexts: yaql contexts that know the MuranoPL frame they run in."""

from __future__ import annotations

from yaql.language import contexts as yaql_contexts

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

_NO_FUNCTIONS: dict = {}
_NO_EXCLUSIVE: set = set()


class DslContext(yaql_contexts.Context):
    """A yaql context that knows the MuranoPL frame it evaluates in.

    Almost none registers a function: until one does, a context shares the empty
    function table and exclusive set (never written) instead of making its own.
    """

    _functions: dict = _NO_FUNCTIONS
    _exclusive_funcs: set = _NO_EXCLUSIVE

    def __init__(self, parent: Any = None, frame: Any = None) -> None:
        # The fields of yaql's Context, set directly: contexts are made per call.
        self._parent_context = parent
        self._convention = parent._convention if parent is not None else None
        self._data: dict = {}
        self.frame = frame if frame is not None else getattr(parent, "frame", None)

    def register_function(self, spec: Any, *args: Any, **kwargs: Any) -> None:
        if self._functions is _NO_FUNCTIONS:
            self._functions = {}
            self._exclusive_funcs = set()
        super().register_function(spec, *args, **kwargs)

    def create_child_context(self) -> DslContext:
        return DslContext(self)


# Context classes whose variables live in ``_data`` (checked by exact type:
# ``isinstance`` on yaql's abstract context classes is slow).
PLAIN_CONTEXTS = frozenset({yaql_contexts.Context, DslContext})


def frame_of(ctx: Any) -> Any:
    """The MuranoPL frame of any context, including yaql-made ones."""
    frame = getattr(ctx, "frame", None)
    while frame is None and ctx is not None:
        ctx = ctx.parent
        frame = getattr(ctx, "frame", None)
    return frame


def runtime_of(ctx: Any) -> Any:
    """The :class:`~murano_engine.dsl.runtime.Runtime` of the run ``ctx`` belongs to."""
    frame = frame_of(ctx)
    if frame is None:
        raise RuntimeError("an expression was evaluated outside any MuranoPL frame")
    return frame.executor.runtime
