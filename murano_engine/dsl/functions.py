"""The functions Murano adds to yaql, and how compiled code reaches objects.

:class:`InterpreterRuntime` is what :mod:`compiler` calls for member access,
method calls and function calls; :data:`FUNCTIONS` are Murano's additions
(``new``, ``id``, ``find``, ``format`` ...). Everything else is the yaql
standard library, reached through yaql's runner.
"""

from __future__ import annotations

import base64
import functools
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import yaql
import yaql.legacy
from yaql.language import expressions as ast
from yaql.language import utils as yaql_utils
from yaql.language.utils import FrozenDict

from murano_engine import boundary, concurrency
from murano_engine.dsl import compiler, errors, values
from murano_engine.dsl.contracts import CONTRACT_FUNCTIONS
from murano_engine.dsl.expressions import DslContext, engine, frame_of
from murano_engine.dsl.objects import MuranoObject, ObjectView, TypeRef, real_object

NO_VALUE = yaql_utils.NO_VALUE


@dataclass(frozen=True)
class FunctionSpec:
    """A Murano function: ``func(ctx, *args, **kwargs)``.

    ``method`` allows the ``receiver.name(...)`` form (the receiver becomes
    the first argument). ``raw`` functions get argument evaluators instead of
    values (for lambdas such as ``pselect``'s).
    """

    func: Callable[..., Any]
    method: bool = True
    raw: bool = False


FUNCTIONS: dict[str, FunctionSpec] = {}


def function(name: str, method: bool = True, raw: bool = False) -> Callable:
    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        FUNCTIONS[name] = FunctionSpec(func, method, raw)
        return func
    return register


# -- root contexts ---------------------------------------------------------------

@functools.cache
def root_context(legacy: bool) -> Any:
    """The yaql standard library (legacy flavour for formats 1.0 and 1.1)."""
    engine()
    base = yaql.legacy.create_context() if legacy else yaql.create_context()
    return DslContext(base)


# -- the runtime compiled code calls -------------------------------------------------

class InterpreterRuntime(compiler.Runtime):
    @property  # type: ignore[override]
    def engine(self) -> Any:
        return engine()

    def get_member(self, receiver: Any, name: str, ctx: Any) -> Any:
        if isinstance(receiver, (MuranoObject, ObjectView)):
            return receiver.real.executor.get_property(receiver, name, frame_of(ctx))
        if isinstance(receiver, Mapping):
            return receiver.get(name)
        if isinstance(receiver, TypeRef):
            frame = frame_of(ctx)
            return frame.executor.get_static(receiver.murano_class, name, frame)
        if receiver is None:
            raise errors.NoPropertyFound(f"cannot read property {name!r} of null")
        reflected = getattr(receiver, "murano_member", None)
        if reflected is not None:
            return reflected(name)
        return ctx("#operator_.", self.engine, NO_VALUE, ctx)(
            receiver, ast.KeywordConstant(name))

    def call_member(self, receiver: Any, name: str, args: list, kwargs: dict, ctx: Any,
                    yaql_args: tuple) -> Any:
        frame = frame_of(ctx)
        if isinstance(receiver, (MuranoObject, ObjectView, TypeRef)):
            method = receiver.murano_class.find_method(name)
            if method is not None:
                if isinstance(receiver, TypeRef) and not method.is_static:
                    raise errors.NoMethodFound(
                        f"method {name} of {receiver.murano_class.name} is not static")
                return frame.executor.invoke(
                    method, receiver, [a(ctx) for a in args],
                    {k: v(ctx) for k, v in kwargs.items()} if kwargs else {}, frame)
        spec = FUNCTIONS.get(name)
        if spec is not None and spec.method:
            if spec.raw:
                return spec.func(ctx, receiver, args, kwargs)
            return spec.func(ctx, receiver, *[a(ctx) for a in args],
                             **{k: v(ctx) for k, v in kwargs.items()})
        extension = _extension_method(frame, name)
        if extension is not None:
            return frame.executor.invoke(
                extension, extension.declaring_class.ref, [receiver] + [a(ctx) for a in args],
                {k: v(ctx) for k, v in kwargs.items()}, frame)
        reflected = getattr(receiver, "murano_call", None)
        if reflected is not None:
            return reflected(name, [a(ctx) for a in args], {k: v(ctx) for k, v in kwargs.items()})
        if isinstance(receiver, (MuranoObject, ObjectView, TypeRef)):
            raise errors.NoMethodFound(
                f"method {name!r} is not found in {receiver.murano_class.name}")
        return ctx(name, self.engine, receiver, ctx)(*yaql_args)

    def call_function(self, name: str, args: list, kwargs: dict, ctx: Any,
                      yaql_args: tuple) -> Any:
        spec = FUNCTIONS.get(name)
        if spec is not None:
            if spec.raw:
                return spec.func(ctx, args[0](ctx) if args else None, args[1:], kwargs)
            return spec.func(ctx, *[a(ctx) for a in args],
                             **{k: v(ctx) for k, v in kwargs.items()})
        return ctx(name, self.engine, NO_VALUE, ctx)(*yaql_args)

    def type_reference(self, prefix: str, name: str, ctx: Any) -> Any:
        frame = frame_of(ctx)
        return frame.murano_class.resolve_type(f"{prefix}:{name}").ref

    def is_instance(self, value: Any, type_ref: Any, ctx: Any) -> bool:
        if not isinstance(value, (MuranoObject, ObjectView)):
            return False
        return value.murano_class.is_compatible(_resolve_class(ctx, type_ref))

    def contract_function(self, name: str) -> Callable[..., Any] | None:
        return CONTRACT_FUNCTIONS.get(name)

    def murano_function(self, name: str) -> FunctionSpec | None:
        return FUNCTIONS.get(name)


def _extension_method(frame: Any, name: str) -> Any:
    if frame is None:
        return None
    cls = frame.murano_class
    method = cls.extension_method(name)
    if method is not None:
        return method
    for imported in cls.imports():
        method = imported.extension_method(name)
        if method is not None:
            return method
    return None


compiler.runtime = InterpreterRuntime()


# -- helpers -----------------------------------------------------------------------

def _resolve_class(ctx: Any, value: Any) -> Any:
    if isinstance(value, TypeRef):
        return value.murano_class
    if isinstance(value, (MuranoObject, ObjectView)):
        return value.murano_class
    return frame_of(ctx).murano_class.resolve_type(str(value))


def _real(value: Any, what: str) -> MuranoObject:
    obj = real_object(value)
    if obj is None:
        raise errors.DslInvalidOperationError(f"{what}: {value!r} is not an object")
    return obj


# -- object functions ----------------------------------------------------------------

@function("new", method=False)
def new(ctx: Any, *args: Any, **kwargs: Any) -> MuranoObject:
    """``new(type, owner, objectName, extra, prop => v)``, ``new(type, props)``, ``new(model)``."""
    from murano_engine.dsl import model
    frame = frame_of(ctx)
    executor = frame.executor
    if not args:
        raise errors.NoMatchingMethodException("new() needs a type or an object model")
    first, rest = args[0], list(args[1:])
    if isinstance(first, Mapping):
        owner = rest[0] if rest else kwargs.get("owner")
        spec_dict = model.copy_with_new_ids(executor, first)
        return executor.object_from_contract(spec_dict, None, real_object(owner))
    cls = _resolve_class(ctx, first)
    props: dict[str, Any] = {}
    if rest and isinstance(rest[0], Mapping):
        props.update(rest.pop(0))
    names = ("owner", "objectName", "extra")
    positional = dict(zip(names, rest, strict=False))
    for key in names:
        if key in kwargs:
            positional[key] = kwargs.pop(key)
    props.update(kwargs)
    owner = real_object(positional.get("owner"))
    obj = executor.shell(cls, owner, None, positional.get("objectName"))
    extra = positional.get("extra") or {}
    obj.designer = {k: v for k, v in extra.items() if isinstance(k, str) and k.startswith("_")}
    executor.initialize(obj, props, frame, native_args=props)
    return obj


@function("id")
def id_(ctx: Any, obj: Any) -> str | None:
    found = real_object(obj)
    return found.id if found is not None else None


@function("cast")
def cast(ctx: Any, obj: Any, type_: Any, version_spec: Any = None) -> Any:
    real = _real(obj, "cast")
    cls = _resolve_class(ctx, type_)
    if not real.murano_class.is_compatible(cls):
        raise errors.DslInvalidOperationError(f"cannot cast {real!r} to {cls.name}")
    return ObjectView(real, cls)


def _super(ctx: Any, receiver: Any, args: list, kwargs: dict, parallel: bool) -> Any:
    frame = frame_of(ctx)
    real = _real(receiver, "super")
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


@function("super", raw=True)
def super_(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    return _super(ctx, receiver, args, kwargs, parallel=False)


@function("psuper", raw=True)
def psuper(ctx: Any, receiver: Any, args: list, kwargs: dict) -> Any:
    return _super(ctx, receiver, args, kwargs, parallel=True)


@function("require")
def require(ctx: Any, value: Any) -> Any:
    if value is None:
        raise errors.DslInvalidOperationError("Required value is missing")
    return value


@function("find")
def find(ctx: Any, obj: Any, type_: Any) -> Any:
    real = _real(obj, "find")
    cls = _resolve_class(ctx, type_)
    current = real.owner
    while current is not None:
        if current.murano_class.is_compatible(cls):
            return current
        current = current.owner
    return None


@function("sleep")
def sleep(ctx: Any, seconds: Any = 0) -> None:
    boundary.outside().sleep(float(seconds or 0))


@function("type")
def type_(ctx: Any, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, (MuranoObject, ObjectView)):
        frame = frame_of(ctx)
        if frame.murano_class.package.format <= (1, 3):
            return value.murano_class.name
        return value.murano_class.ref
    return _resolve_class(ctx, value).ref


@function("typeinfo")
def typeinfo(ctx: Any, value: Any) -> Any:
    from murano_engine.dsl.reflection import TypeInfo
    if isinstance(value, ObjectView):
        value = value.real
    return TypeInfo(_resolve_class(ctx, value), frame_of(ctx).executor)


@function("name")
def name(ctx: Any, obj: Any) -> Any:
    return _real(obj, "name").name


@function("metadata")
def metadata(ctx: Any, obj: Any) -> Any:
    return _real(obj, "metadata").metadata


@function("isObject")
def is_object(ctx: Any, value: Any) -> bool:
    return isinstance(value, (MuranoObject, ObjectView, TypeRef))


@function("serialize")
@function("dump")
def dump(ctx: Any, obj: Any, serialization_type: str = "Serializable",
         ignore_upcasts: bool = True, **kwargs: Any) -> Any:
    from murano_engine.dsl import serializer
    serialization_type = kwargs.get("serializationType", serialization_type)
    real = _real(obj, "dump")
    if serialization_type == "Inline":
        dumped = serializer.dump_object(real)
        header = dumped.pop("?")
        return values.freeze({serializer.type_string(real.murano_class): dumped,
                              "id": header["id"], "name": header.get("name")})
    return values.freeze(serializer.dump_object(real, mixed=serialization_type == "Mixed"))


@function("call", method=False)
def call(ctx: Any, name_: Any, args: Any = (), kwargs: Any = None, receiver: Any = None) -> Any:
    frame = frame_of(ctx)
    if isinstance(receiver, (MuranoObject, ObjectView, TypeRef)):
        method = receiver.murano_class.find_method(str(name_))
        if method is None:
            raise errors.NoMethodFound(
                f"method {name_!r} is not found in {receiver.murano_class.name}")
        return frame.executor.invoke(method, receiver, list(args or ()), dict(kwargs or {}),
                                     frame)
    return ctx(str(name_), compiler.runtime.engine, NO_VALUE, ctx)(
        *(args or ()), **dict(kwargs or {}))


# -- engine functions -----------------------------------------------------------------

@function("base64encode")
def base64encode(ctx: Any, value: Any) -> str:
    data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    return base64.b64encode(data).decode("ascii")


@function("base64decode")
def base64decode(ctx: Any, value: Any) -> str:
    return base64.b64decode(value).decode("utf-8")


@function("pselect", raw=True)
def pselect(ctx: Any, collection: Any, args: list, kwargs: dict) -> Any:
    items = values.freeze(collection)
    selector = args[0] if args else kwargs["selector"]

    def run(item: Any) -> Any:
        child = DslContext(ctx)
        child["$"] = item
        return selector(child)

    return tuple(concurrency.run_all([functools.partial(run, i) for i in items]))


_MACRO = re.compile(r"\{(\w+)\}")


@function("bind")
def bind(ctx: Any, template: Any, mappings: Any) -> Any:
    def walk(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("$"):
            key = value[1:]
            if re.fullmatch(r"\w+", key):
                if key not in mappings:
                    raise KeyError(key)
                return mappings[key]
            return _MACRO.sub(lambda m: str(mappings[m.group(1)]), key)
        if isinstance(value, Mapping):
            return FrozenDict({walk(k): walk(v) for k, v in value.items()})
        if isinstance(value, (list, tuple)):
            return tuple(walk(v) for v in value)
        return value
    return walk(template)


@function("randomName", method=False)
def random_name(ctx: Any) -> str:
    return boundary.outside().random_name()


@function("patch")
def patch(ctx: Any, obj: Any, patches: Any) -> Any:
    import jsonpatch
    try:
        return values.freeze(jsonpatch.apply_patch(values.thaw(obj), values.thaw(patches)))
    except jsonpatch.JsonPointerException:
        return obj


@function("logger", method=False)
def logger(ctx: Any, name_: Any) -> Any:
    frame = frame_of(ctx)
    cls = frame.executor.loader.find_class("io.murano.system.Logger")
    return frame.executor.new_object(cls, props={"loggerName": name_}, caller=frame,
                                     native_args={"loggerName": name_})


class SafeFormatter(string.Formatter):
    """``str.format`` without attribute or index access into the arguments."""

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        if "." in field_name or "[" in field_name:
            raise ValueError(f"format field {field_name!r} may not use '.' or '['")
        return super().get_field(field_name, args, kwargs)

    def format_field(self, value: Any, format_spec: str) -> str:
        if isinstance(value, bool) and not format_spec:
            return "true" if value else "false"
        if value is None and not format_spec:
            return "null"
        return super().format_field(value, format_spec)


_FORMATTER = SafeFormatter()


@function("format")
def format_(ctx: Any, template: Any, *args: Any, **kwargs: Any) -> str:
    return _FORMATTER.vformat(str(template), args, kwargs)


@function("config", method=False)
def config(ctx: Any, *args: Any, **kwargs: Any) -> Any:
    frame = frame_of(ctx)
    if frame.murano_class.package.name != "io.murano":
        raise errors.PolicyViolationException("config() is available to io.murano only")
    settings = frame.executor.services.get("config") or {}
    if len(args) == 1:
        return settings.get("engine", {}).get(args[0])
    group, setting = args[0], args[1]
    return settings.get(group, {}).get(setting)


# -- formats 1.0 and 1.1 -------------------------------------------------------------------

@function("substr")
def substr(ctx: Any, text: str, start: int, length: int = -1) -> str:
    return text[start:] if length < 0 else text[start:start + length]


@function("firstOrDefault")
def first_or_default(ctx: Any, collection: Any, default: Any = None) -> Any:
    for item in collection:
        return item
    return default
