"""io.murano.system.GC: collection and destruction subscriptions."""

from __future__ import annotations

from typing import Any

from murano_engine.dsl import collector, errors
from murano_engine.dsl.natives import NativeCall, native_class, static
from murano_engine.dsl.objects import real_object


@native_class("io.murano.system.GC")
class GarbageCollector:
    @static
    def collect(call: NativeCall) -> None:
        collector.collect(call.executor)

    @static
    def isDestroyed(call: NativeCall, obj: Any) -> bool:  # noqa: N802
        return real_object(obj).destroyed

    @static
    def isDoomed(call: NativeCall, obj: Any) -> bool:  # noqa: N802
        target = real_object(obj)
        return target.destroyed or collector.is_doomed(call.executor, target)

    @static
    def subscribeDestruction(call: NativeCall, publisher: Any, subscriber: Any,  # noqa: N802
                             handler: str | None = None) -> None:
        source, target = real_object(publisher), real_object(subscriber)
        if handler is not None and target.murano_class.find_method(handler) is None:
            raise errors.NoMethodFound(
                f"handler {handler!r} is not a method of {target.murano_class.name}")
        entry = (target, handler)
        if entry not in source.dependencies:
            source.dependencies.append(entry)

    @static
    def unsubscribeDestruction(call: NativeCall, publisher: Any,  # noqa: N802
                               subscriber: Any, handler: str | None = None) -> None:
        source, target = real_object(publisher), real_object(subscriber)
        entry = (target, handler)
        if entry in source.dependencies:
            source.dependencies.remove(entry)
