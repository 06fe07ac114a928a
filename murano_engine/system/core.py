"""io.murano.Object, io.murano.Exception and io.murano.StackTrace."""

from __future__ import annotations

from murano_engine.dsl import values
from murano_engine.dsl.errors import MuranoPlException
from murano_engine.dsl.natives import NativeCall, method, native_class
from murano_engine.dsl.objects import real_object

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


def _owner_name(call: NativeCall, owner: Any) -> str:
    if owner is None:
        cls = call.caller_class()
        return cls.name if cls is not None else ""
    if hasattr(owner, "murano_class"):
        return owner.murano_class.name
    return str(owner)


@native_class("io.murano.Object")
class ObjectNatives:
    @method
    def setAttr(call: NativeCall, name: str, value: Any, owner: Any = None) -> None:  # noqa: N802
        obj = call.this
        key = (_owner_name(call, owner), str(name))
        if value is None:
            obj.attributes.pop(key, None)
            return
        target = real_object(value)
        obj.attributes[key] = target.id if target is not None else values.freeze(value)

    @method
    def getAttr(call: NativeCall, name: str, default: Any = None,  # noqa: N802
                owner: Any = None) -> Any:
        return call.this.attributes.get((_owner_name(call, owner), str(name)), default)


@native_class("io.murano.Exception")
class ExceptionNatives:
    @method
    def toString(call: NativeCall) -> str:  # noqa: N802
        exc = call.this.native
        if isinstance(exc, MuranoPlException):
            from murano_engine.dsl.errors import format_stack
            return f"{exc.describe()}\n{format_stack(exc.murano_stack)}"
        props = call.this.props
        return f"[{props.get('name')}]: {props.get('message')}"


@native_class("io.murano.StackTrace")
class StackTraceNatives:
    @method
    def toString(call: NativeCall, prefix: str = "") -> str:  # noqa: N802
        lines = []
        for frame in call.this.props.get("frames") or ():
            lines.append(f"{prefix}{frame.get('packageName')} {frame.get('typeName')}."
                         f"{frame.get('methodName')} at {frame.get('location')}")
        return "\n".join(lines)
