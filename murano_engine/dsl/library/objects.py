"""Functions on MuranoPL objects and types: ``new``, ``cast``, ``super``, ``find`` ..."""

from __future__ import annotations

import functools
from collections.abc import Mapping

from murano_engine.dsl import concurrency, errors, values
from murano_engine.dsl.contexts import DslContext, frame_of
from murano_engine.dsl.objects import MuranoObject, ObjectView, TypeRef, real_object
from murano_engine.dsl.runtime import NO_VALUE, FunctionSpec, resolve_class

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


def _real(value: Any, what: str) -> MuranoObject:
    obj = real_object(value)
    if obj is None:
        raise errors.DslInvalidOperationError(f"{what}: {value!r} is not an object")
    return obj


def new(ctx: Any, *args: Any, **kwargs: Any) -> MuranoObject:
    """``new(type, owner, objectName, extra, prop => v)``, ``new(type, props)``, ``new(model)``."""
    frame = frame_of(ctx)
    executor = frame.executor
    if not args:
        raise errors.NoMatchingMethodException("new() needs a type or an object model")
    first, rest = args[0], list(args[1:])
    if isinstance(first, Mapping):
        from murano_engine.dsl import model
        owner = rest[0] if rest else kwargs.get("owner")
        return model.load_objects(executor, first, real_object(owner))
    cls = resolve_class(ctx, first)
    props: dict[str, Any] = {}
    if rest and isinstance(rest[0], Mapping):
        props.update(rest.pop(0))
    names = ("owner", "objectName", "extra")
    positional = dict(zip(names, rest, strict=False))
    for key in names:
        if key in kwargs:
            positional[key] = kwargs.pop(key)
    props.update(kwargs)
    extra = positional.get("extra") or {}
    return executor.new_object(
        cls, real_object(positional.get("owner")), props, name=positional.get("objectName"),
        caller=frame, native_args=props,
        designer={k: v for k, v in extra.items() if isinstance(k, str) and k.startswith("_")})


def id_(ctx: Any, obj: Any) -> str | None:
    found = real_object(obj)
    return found.id if found is not None else None


def cast(ctx: Any, obj: Any, type_: Any, version_spec: Any = None) -> Any:
    real = _real(obj, "cast")
    cls = resolve_class(ctx, type_)
    if not real.murano_class.is_compatible(cls):
        raise errors.DslInvalidOperationError(f"cannot cast {real!r} to {cls.name}")
    return ObjectView(real, cls)


def _super(ctx: Any, receiver: Any, args: list, kwargs: dict, parallel: bool) -> Any:
    frame = frame_of(ctx)
    real = _real(frame.this if receiver is None else receiver, "super")
    expression = args[0] if args else kwargs.get("expr")
    views = [ObjectView(real, parent) for parent in frame.murano_class.parents]
    if expression is None:
        return tuple(views)

    def run(view: ObjectView) -> Any:
        child = DslContext(ctx)
        child["$"] = view
        return expression(child)

    if parallel:
        return tuple(concurrency.run_all([functools.partial(run, v) for v in views]))
    return tuple(run(v) for v in views)


def super_(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    return _super(ctx, receiver, args, kwargs, parallel=False)


def psuper(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    return _super(ctx, receiver, args, kwargs, parallel=True)


def require(ctx: Any, value: Any) -> Any:
    if value is None:
        raise errors.DslInvalidOperationError("Required value is missing")
    return value


def find(ctx: Any, obj: Any, type_: Any) -> Any:
    real = _real(obj, "find")
    cls = resolve_class(ctx, type_)
    current = real.owner
    while current is not None:
        if current.murano_class.is_compatible(cls):
            return current
        current = current.owner
    return None


def type_(ctx: Any, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, (MuranoObject, ObjectView)):
        frame = frame_of(ctx)
        if frame.murano_class.package.format <= (1, 3):
            return value.murano_class.name
        return value.murano_class.ref
    return resolve_class(ctx, value).ref


def typeinfo(ctx: Any, value: Any) -> Any:
    """The type of an object (of a cast: the class it is cast to), a type or a name."""
    from murano_engine.dsl.reflection import TypeInfo
    return TypeInfo(resolve_class(ctx, value), frame_of(ctx).executor)


def name(ctx: Any, obj: Any) -> Any:
    return _real(obj, "name").name


def metadata(ctx: Any, obj: Any) -> Any:
    return _real(obj, "metadata").metadata


def is_object(ctx: Any, value: Any) -> bool:
    return isinstance(value, (MuranoObject, ObjectView, TypeRef))


def dump(ctx: Any, obj: Any, serialization_type: str = "Serializable",
         ignore_upcasts: bool = True, **kwargs: Any) -> Any:
    """``dump(obj, serializationType, ignoreUpcasts)``: the object as data; a cast is
    dumped as its class when ``ignoreUpcasts`` is false."""
    from murano_engine.dsl import serializer
    serialization_type = kwargs.get("serializationType", serialization_type)
    ignore_upcasts = kwargs.get("ignoreUpcasts", ignore_upcasts)
    if serialization_type not in serializer.FORMS:
        raise ValueError(f"dump(): serialization type {serialization_type!r} is not one of "
                         f"{', '.join(serializer.FORMS)}")
    real = _real(obj, "dump")
    return values.freeze(serializer.dump(real if ignore_upcasts else obj, serialization_type))


def call(ctx: Any, name_: Any, args: Any = (), kwargs: Any = None, receiver: Any = None) -> Any:
    frame = frame_of(ctx)
    if isinstance(receiver, (MuranoObject, ObjectView, TypeRef)):
        method = receiver.murano_class.find_method(str(name_))
        if method is None:
            raise errors.NoMethodFound(
                f"method {name_!r} is not found in {receiver.murano_class.name}")
        return frame.executor.invoke(method, receiver, list(args or ()), dict(kwargs or {}),
                                     frame)
    return ctx(str(name_), frame.executor.runtime.engine, NO_VALUE, ctx)(
        *(args or ()), **dict(kwargs or {}))


FUNCTIONS = {
    "new": FunctionSpec(new, method=False),
    "id": FunctionSpec(id_),
    "cast": FunctionSpec(cast),
    "super": FunctionSpec(super_, raw=True),
    "psuper": FunctionSpec(psuper, raw=True),
    "require": FunctionSpec(require),
    "find": FunctionSpec(find),
    "type": FunctionSpec(type_),
    "typeinfo": FunctionSpec(typeinfo),
    "name": FunctionSpec(name),
    "metadata": FunctionSpec(metadata),
    "isObject": FunctionSpec(is_object),
    "dump": FunctionSpec(dump),
    "serialize": FunctionSpec(dump),
    "call": FunctionSpec(call, method=False),
}
