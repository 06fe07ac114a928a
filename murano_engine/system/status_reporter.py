"""io.murano.system.StatusReporter: deployment status messages for the environment's user."""

from __future__ import annotations

from typing import Any

from murano_engine.dsl import reports
from murano_engine.dsl.natives import NativeCall, method, native_class
from murano_engine.dsl.objects import real_object


def environment_id(call: NativeCall, environment: Any) -> str | None:
    """The task's environment id, else the id of the environment object."""
    configured = call.executor.services.get("environment_id")
    if configured:
        return str(configured)
    target = real_object(environment)
    return target.id if target is not None else None


def send(call: NativeCall, environment: Any, entity: Any, text: Any, level: str,
         event: str | None = None) -> None:
    """One report about ``entity`` (an object, an id or null) to the ``reporter`` service."""
    target = real_object(entity)
    entity_id = target.id if target is not None else (str(entity) if entity else None)
    reports.report(call.executor.services.get("reporter"), environment_id(call, environment),
                 entity_id, str(text), level, event=event)


@native_class("io.murano.system.StatusReporter")
class StatusReporter:
    def __init__(self, call: NativeCall, environment: Any = None) -> None:
        self.environment = environment

    @method
    def report(call: NativeCall, obj: Any, msg: Any) -> None:
        send(call, call.native.environment, obj, msg, "info")

    @method
    def reportError(call: NativeCall, obj: Any, msg: Any) -> None:  # noqa: N802
        send(call, call.native.environment, obj, msg, "error")

    @method
    def report_error(call: NativeCall, obj: Any, msg: Any) -> None:
        send(call, call.native.environment, obj, msg, "error")
