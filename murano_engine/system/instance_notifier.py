"""io.murano.system.InstanceNotifier: which applications and servers an environment runs.

Murano sends these events to its API for billing; here each one becomes an
``info`` status report about the object.
"""

from __future__ import annotations

from typing import Any

from murano_engine.dsl.natives import NativeCall, method, native_class
from murano_engine.dsl.objects import real_object
from murano_engine.system.status_reporter import send


def _label(obj: Any) -> str:
    target = real_object(obj)
    if target is None:
        return str(obj)
    return f"{target.murano_class.name} {target.props.get('name') or target.name or target.id}"


@native_class("io.murano.system.InstanceNotifier")
class InstanceNotifier:
    def __init__(self, call: NativeCall, environment: Any = None) -> None:
        self.environment = environment

    @method
    def trackApplication(call: NativeCall, obj: Any, title: Any = None,  # noqa: N802
                         unitCount: Any = None) -> None:  # noqa: N803
        units = f" ({unitCount} units)" if unitCount is not None else ""
        send(call, call.native.environment, obj, f"{title or _label(obj)} is deployed{units}",
             "info", event="application-deployed")

    @method
    def untrackApplication(call: NativeCall, obj: Any) -> None:  # noqa: N802
        send(call, call.native.environment, obj, f"{_label(obj)} is removed", "info")

    @method
    def trackCloudInstance(call: NativeCall, instance: Any) -> None:  # noqa: N802
        send(call, call.native.environment, instance, f"{_label(instance)} is running", "info")

    @method
    def untrackCloudInstance(call: NativeCall, instance: Any) -> None:  # noqa: N802
        send(call, call.native.environment, instance, f"{_label(instance)} is released", "info")
