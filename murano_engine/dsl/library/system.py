"""Functions that reach the engine: ``sleep``, ``randomName``, ``logger``, ``config``."""

from __future__ import annotations

from murano_engine.dsl import boundary, budget, errors
from murano_engine.dsl.contexts import frame_of
from murano_engine.dsl.runtime import FunctionSpec

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


def sleep(ctx: Any, seconds: Any = 0) -> None:
    """Sleep, at most for what is left of the task's wall-clock budget."""
    budget.sleep(ctx, float(seconds or 0))


def random_name(ctx: Any) -> str:
    frame = frame_of(ctx)
    return (frame.executor.outside if frame is not None else boundary.outside()).random_name()


def logger(ctx: Any, name_: Any) -> Any:
    frame = frame_of(ctx)
    cls = frame.executor.loader.find_class("io.murano.system.Logger")
    return frame.executor.new_object(cls, props={"loggerName": name_}, caller=frame,
                                     native_args={"loggerName": name_})


def config(ctx: Any, *args: Any, **kwargs: Any) -> Any:
    """An engine setting; only code of the core library loaded from ``meta/`` may read them."""
    frame = frame_of(ctx)
    if not frame.murano_class.package.trusted:
        raise errors.PolicyViolationException(
            f"config() is available to the engine's core library only, not to "
            f"{frame.murano_class.name} of package {frame.murano_class.package.name}")
    settings = frame.executor.services.get("config") or {}
    if len(args) == 1:
        return settings.get("engine", {}).get(args[0])
    group, setting = args[0], args[1]
    return settings.get(group, {}).get(setting)


FUNCTIONS = {
    "sleep": FunctionSpec(sleep),
    "randomName": FunctionSpec(random_name, method=False),
    "logger": FunctionSpec(logger, method=False),
    "config": FunctionSpec(config, method=False),
}
