"""io.murano.system.InstanceNotifier: which applications and servers an environment runs.

Murano sends these events to its API for billing; here each one becomes an
``info`` status report about the object. A server is reported running once a
run: the framework deploys a server group again after scaling it (``scaleOut``
deploys the group, then the application deploys it), and each deploy tracks
every server of the group.
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


def _key(obj: Any) -> str:
    target = real_object(obj)
    return target.id if target is not None else str(obj)


@native_class("io.murano.system.InstanceNotifier")
class InstanceNotifier:
    def __init__(self, call: NativeCall, environment: Any = None) -> None:
        self.environment = environment
        #: ids of the servers reported running in this run (and not released since)
        self.running: set[str] = set()

    @method
    def trackApplication(call: NativeCall, obj: Any, title: Any = None,  # noqa: N802
                         unitCount: Any = None) -> None:  # noqa: N803
        units = "" if unitCount is None else \
            f" ({unitCount} unit{'' if unitCount == 1 else 's'})"
        send(call, call.native.environment, obj, f"{title or _label(obj)} is deployed{units}",
             "info", event="application-deployed")

    @method
    def untrackApplication(call: NativeCall, obj: Any) -> None:  # noqa: N802
        send(call, call.native.environment, obj, f"{_label(obj)} is removed", "info")

    @method
    def trackCloudInstance(call: NativeCall, instance: Any) -> None:  # noqa: N802
        key = _key(instance)
        if key in call.native.running:
            return
        call.native.running.add(key)
        send(call, call.native.environment, instance, f"{_label(instance)} is running", "info")

    @method
    def untrackCloudInstance(call: NativeCall, instance: Any) -> None:  # noqa: N802
        call.native.running.discard(_key(instance))
        send(call, call.native.environment, instance, f"{_label(instance)} is released", "info")
