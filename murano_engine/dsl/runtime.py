"""The runtime compiled code calls.

A :class:`Runtime` is what :mod:`compiler`'s closures reach for member
access, method calls and function calls: MuranoPL objects, Murano's own
functions (a table of :class:`FunctionSpec`), contract functions, and the
yaql standard library for everything else. An
:class:`~murano_engine.dsl.interpreter.Interpreter` pairs a runtime with the native
classes its loaders attach; nothing here is global.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping

from yaql.language import expressions as ast
from yaql.language import utils as yaql_utils
from yaql.language.utils import FrozenDict

from murano_engine.dsl import (
    errors,
    queries,
    values,
    yaql_messages,  # noqa: F401 - yaql quotes receivers bounded
)
from murano_engine.dsl.contexts import DslContext, frame_of
from murano_engine.dsl.expressions import CallEngine
from murano_engine.dsl.frozen_record import FrozenRecord
from murano_engine.dsl.objects import MuranoObject, ObjectView, TypeRef
from murano_engine.dsl.values import LITERAL_NULL, literal_null

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

NO_VALUE = yaql_utils.NO_VALUE
#: yaql string and list methods that formats 1.0 and 1.1 also call as plain
#: functions (``toUpper($name)``)
LEGACY_FUNCTION_FORMS = ("to_lower", "to_upper", "trim", "join", "split", "starts_with",
                         "ends_with", "matches", "replace", "flatten")
if TYPE_CHECKING:
    ContractFunction = Callable[[Any, Any, list, dict], Any]


class FunctionSpec(FrozenRecord):
    """A Murano function: ``func(ctx, *args, **kwargs)``.

    ``method`` allows the ``receiver.name(...)`` form (the receiver becomes
    the first argument). ``raw`` functions get argument evaluators instead of
    values (for lambdas such as ``pselect``'s).
    """

    __slots__ = ("func", "method", "raw")
    func: Callable[..., Any]
    method: bool
    raw: bool

    def __init__(self, func: Callable[..., Any], method: bool = True, raw: bool = False) -> None:
        self._set(func=func, method=method, raw=raw)


class Runtime:
    """Member access, calls and functions for compiled code, with one function table."""

    def __init__(self, functions: Mapping[str, FunctionSpec],
                 contract_functions: Mapping[str, ContractFunction]) -> None:
        self.functions = dict(functions)
        self.contract_functions = dict(contract_functions)
        self._roots: dict[bool, DslContext] = {}

    @functools.cached_property
    def engine(self) -> CallEngine:
        """The engine functions yaql resolves are called with (its parser made on first
        use: a warm start reads parsed class files back and needs none)."""
        return CallEngine()

    def root_context(self, legacy: bool) -> DslContext:
        """The yaql standard library (legacy flavour for formats 1.0 and 1.1)."""
        root = self._roots.get(legacy)
        if root is None:
            root = self._roots[legacy] = _LibraryRoot(lambda: _yaql_library(legacy))
        return root

    def get_member(self, receiver: Any, name: str, ctx: Any) -> Any:
        if type(receiver) is MuranoObject:  # the common case first
            return receiver.executor.get_property(
                receiver, name, getattr(ctx, "frame", None) or frame_of(ctx))
        if type(receiver) is FrozenDict:  # a record's field (``$.amount`` in a lambda)
            try:
                return receiver._d[name]  # its dict's: C code, FrozenDict's is Python
            except KeyError:
                return _missing_key(name, ctx)
        if isinstance(receiver, (MuranoObject, ObjectView)):
            return receiver.real.executor.get_property(receiver, name, frame_of(ctx))
        if isinstance(receiver, Mapping):
            return receiver[name] if name in receiver else _missing_key(name, ctx)
        if isinstance(receiver, TypeRef):
            frame = frame_of(ctx)
            return frame.executor.get_static(receiver.murano_class, name, frame)
        if receiver is None:
            raise errors.NoPropertyFound(f"cannot read property {name!r} of null")
        reflected = getattr(receiver, "murano_member", None)
        if reflected is not None:
            return reflected(name)
        if isinstance(receiver, Iterable) and not isinstance(receiver, (str, bytes)):
            # ``$list.name``: the member of every item (objects and reflection values too)
            return tuple(self.get_member(item, name, ctx) for item in values.freeze(receiver))
        return ctx("#operator_.", self.engine, NO_VALUE, ctx)(
            receiver, ast.KeywordConstant(name))

    def call_member(self, receiver: Any, name: str, args: list, kwargs: dict, ctx: Any,
                    yaql_args: tuple) -> Any:
        """``receiver.name(...)``; arguments are evaluated only if the callee is eager."""
        frame = getattr(ctx, "frame", None) or frame_of(ctx)
        if type(receiver) is MuranoObject:  # the common case first
            method = receiver.murano_class.find_method(name)
            if method is not None:
                return frame.executor.invoke(
                    method, receiver,
                    [LITERAL_NULL if a is literal_null else a(ctx) for a in args],
                    _keyword_arguments(kwargs, ctx) if kwargs else {}, frame)
        elif isinstance(receiver, (ObjectView, TypeRef)):
            method = receiver.murano_class.find_method(name)
            if method is not None:
                if isinstance(receiver, TypeRef) and not method.is_static:
                    raise errors.NoMatchingMethodException(
                        f"method {name} of {receiver.murano_class.name} is not static")
                return frame.executor.invoke(
                    method, receiver,
                    [LITERAL_NULL if a is literal_null else a(ctx) for a in args],
                    _keyword_arguments(kwargs, ctx) if kwargs else {}, frame)
        spec = self.functions.get(name)
        if spec is not None and spec.method:
            if spec.raw:
                return spec.func(ctx, receiver, args, kwargs)
            return spec.func(ctx, receiver, *[a(ctx) for a in args],
                             **{k: v(ctx) for k, v in kwargs.items()})
        extension = _extension_method(frame, name)
        if extension is not None:
            return frame.executor.invoke(
                extension, extension.declaring_class.ref,
                [receiver] + [LITERAL_NULL if a is literal_null else a(ctx) for a in args],
                _keyword_arguments(kwargs, ctx), frame)
        reflected = getattr(receiver, "murano_call", None)
        if reflected is not None:
            return reflected(name, [a(ctx) for a in args], {k: v(ctx) for k, v in kwargs.items()})
        if isinstance(receiver, TypeRef):
            # as in Murano, whose type references reach methods through yaql's overloads
            raise errors.NoMatchingMethodException(
                f"static method {name!r} is not found in {receiver.murano_class.name}")
        if isinstance(receiver, (MuranoObject, ObjectView)):
            raise errors.NoMethodFound(
                f"method {name!r} is not found in {receiver.murano_class.name}")
        fast = queries.METHODS.get(name)
        if fast is not None:
            result = fast(ctx, receiver, args, kwargs)
            if result is queries.EMPTY:
                receiver = ()
            elif result is not queries.NOT_HANDLED:
                return result
        return ctx(name, self.engine, receiver, ctx)(*yaql_args)

    def call_function(self, name: str, args: list, kwargs: dict, ctx: Any,
                      yaql_args: tuple) -> Any:
        spec = self.functions.get(name)
        if spec is not None:
            if spec.raw:
                return spec.func(ctx, args[0](ctx) if args else None, args[1:], kwargs)
            return spec.func(ctx, *[a(ctx) for a in args],
                             **{k: v(ctx) for k, v in kwargs.items()})
        lazy = queries.LAZY_FUNCTIONS.get(name)
        if lazy is not None:
            result = lazy(ctx, args, kwargs)
            if result is not queries.NOT_HANDLED:
                return result
        fast = queries.FUNCTIONS.get(name)
        if fast is not None and not kwargs:
            # evaluated once: yaql then gets the values, not the expressions again
            evaluated = [a(ctx) for a in args]
            result = fast(ctx, evaluated)
            if result is not queries.NOT_HANDLED:
                return result
            return ctx(name, self.engine, NO_VALUE, ctx)(*evaluated)
        if name == "len" and len(args) == 1 and not kwargs:
            # evaluated once: yaql then gets the value, not the expression again
            value = args[0](ctx)
            result = queries.length(value)
            if result is not queries.NOT_HANDLED:
                return result
            return ctx(name, self.engine, NO_VALUE, ctx)(value)
        return ctx(name, self.engine, NO_VALUE, ctx)(*yaql_args)

    def type_reference(self, prefix: str, name: str, ctx: Any) -> Any:
        frame = frame_of(ctx)
        return frame.murano_class.resolve_type(f"{prefix}:{name}").ref

    def is_instance(self, value: Any, type_ref: Any, ctx: Any) -> bool:
        if not isinstance(value, (MuranoObject, ObjectView)):
            return False
        return value.murano_class.is_compatible(resolve_class(ctx, type_ref))

    def contract_function(self, name: str) -> ContractFunction | None:
        return self.contract_functions.get(name)

    def murano_function(self, name: str) -> FunctionSpec | None:
        return self.functions.get(name)


def _keyword_arguments(kwargs: Mapping[str, Any], ctx: Any) -> dict[str, Any]:
    """The values of a MuranoPL method call's keyword arguments, a literal ``null``
    as :data:`~murano_engine.dsl.values.LITERAL_NULL` (positional ones are done in
    place, the same way)."""
    return {k: LITERAL_NULL if v is literal_null else v(ctx) for k, v in kwargs.items()}


def _missing_key(name: str, ctx: Any) -> None:
    """``dict.key`` where the dict has no such key: a KeyError, as yaql's ``.`` raises it
    since Format 1.2; null in packages of Formats 1.0 and 1.1 (yaql's legacy flavour)."""
    frame = getattr(ctx, "frame", None) or frame_of(ctx)
    if frame is not None and frame.murano_class is not None \
            and frame.murano_class.package.legacy:
        return None
    raise KeyError(name)


def _yaql_library(legacy: bool) -> Any:
    import yaql.legacy  # here: yaql's package module runs only once a library is needed
    base = yaql.legacy.create_context() if legacy else yaql.create_context()
    if legacy:
        base = base.create_child_context()
        for name in LEGACY_FUNCTION_FORMS:
            for spec in yaql_utils.to_extension_method(name, base):
                base.register_function(spec)
    return base


class _LibraryRoot(DslContext):
    """The root of every frame's context, above it yaql's standard library: made the
    first time something looks past the frames (a call yaql resolves, an undefined
    variable). Registering the library costs about 7 ms, which code that needs none of
    it - the fast paths cover the common functions - does not pay."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        super().__init__(None)

    @property  # yaql's contexts reach their parent through this attribute
    def _parent_context(self) -> Any:
        library = self._library
        if library is None:
            library = self._library = self._make()
        return library

    @_parent_context.setter
    def _parent_context(self, value: Any) -> None:
        self._library = value


def resolve_class(ctx: Any, value: Any) -> Any:
    """The class a type reference, an object or a (namespaced) name stands for."""
    if isinstance(value, TypeRef):
        return value.murano_class
    if isinstance(value, (MuranoObject, ObjectView)):
        return value.murano_class
    return frame_of(ctx).murano_class.resolve_type(str(value))


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
