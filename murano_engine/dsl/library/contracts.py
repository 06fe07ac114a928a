"""Contract functions: the methods on ``$`` inside a contract expression.

``$.string()``, ``$.int()``, ``$.bool()``, ``$.notNull()``, ``$.check(...)``,
``$.class(T)``, ``$.template(T)``, ``$.owned()``, ``$.notOwned()``. Each takes
the context, the value and the call's argument evaluators, and returns the
checked (possibly transformed) value or raises the scope's violation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from murano_engine.dsl import errors
from murano_engine.dsl.contexts import DslContext
from murano_engine.dsl.contracts import ContractScope
from murano_engine.dsl.objects import MuranoObject, ObjectView, TypeRef, real_object
from murano_engine.dsl.values import is_mapping

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


def _scope(ctx: Any) -> ContractScope:
    if type(ctx) is DslContext:  # set in the context itself: no name normalizing
        scope = ctx._data.get("$?contract")
        if scope is not None:
            return scope
    return ctx.get_data("$?contract")


if TYPE_CHECKING:
    ContractFunction = Callable[[Any, Any, list, dict], Any]


def contract_string(ctx: Any, value: Any, args: list, kwargs: dict) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int):  # bool too; a float is no string (as in Murano)
        return str(value)
    obj = real_object(value)
    if obj is not None:
        return obj.id
    raise _scope(ctx).violation(f"value {value!r} is not a string")


def contract_int(ctx: Any, value: Any, args: list, kwargs: dict) -> Any:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise _scope(ctx).violation(f"value {value!r} is not an integer") from None


def contract_bool(ctx: Any, value: Any, args: list, kwargs: dict) -> Any:
    if value is None:
        return None
    return bool(value)


def contract_not_null(ctx: Any, value: Any, args: list, kwargs: dict) -> Any:
    if value is None:
        raise _scope(ctx).violation("null value violates notNull()")
    return value


def contract_check(ctx: Any, value: Any, args: list, kwargs: dict) -> Any:
    predicate = args[0] if args else kwargs.get("predicate")
    message = args[1] if len(args) > 1 else kwargs.get("msg")
    child = DslContext(ctx)
    child._data["$1"] = value
    if predicate is None or not predicate(child):
        text = message(ctx) if message is not None else None
        raise _scope(ctx).violation(text or f"value {value!r} doesn't match predicate")
    return value


def _class_arguments(ctx: Any, args: list, kwargs: dict) -> tuple[Any, Any]:
    values = [a(ctx) for a in args] + [None, None]
    type_ref = kwargs["type"](ctx) if "type" in kwargs else values[0]
    default_ref = kwargs["defaultType"](ctx) if "defaultType" in kwargs else values[1]
    return type_ref, default_ref


def _to_class(ctx: Any, ref: Any) -> Any:
    if ref is None:
        return None
    if isinstance(ref, TypeRef):
        return ref.murano_class
    scope = _scope(ctx)
    return scope.frame.murano_class.resolve_type(str(ref))


def contract_class(ctx: Any, value: Any, args: list, kwargs: dict) -> Any:
    type_ref, default_ref = _class_arguments(ctx, args, kwargs)
    scope = _scope(ctx)
    cls = _to_class(ctx, type_ref)
    if value is None:
        return None
    executor = scope.frame.executor
    obj = real_object(value)
    if obj is None:
        if is_mapping(value):
            default_cls = _to_class(ctx, default_ref) or cls
            obj = executor.object_from_contract(value, default_cls, scope.owner, scope.dry_run)
        elif isinstance(value, str):
            obj = executor.object_by_id(value)
            if obj is None:
                raise errors.NoObjectFoundError(f"[{scope.path}] object {value!r} not found")
        else:
            raise scope.violation(f"value {value!r} cannot be represented as class {cls.name}")
    if obj is None:
        return None
    if not obj.murano_class.is_compatible(cls):
        raise scope.violation(f"object of class {obj.murano_class.name} is not an "
                              f"instance of {cls.name}")
    return value if isinstance(value, (MuranoObject, ObjectView)) else obj


def contract_template(ctx: Any, value: Any, args: list, kwargs: dict) -> Any:
    type_ref, default_ref = _class_arguments(ctx, args, kwargs)
    scope = _scope(ctx)
    cls = _to_class(ctx, type_ref)
    excluded = kwargs["excludeProperties"](ctx) if "excludeProperties" in kwargs else ()
    if value is None:
        return None
    executor = scope.frame.executor
    obj = real_object(value)
    if obj is not None:
        return executor.dump_template(obj, excluded)
    if not isinstance(value, Mapping):
        raise scope.violation(f"value {value!r} cannot be a template of {cls.name}")
    if scope.checking:
        return value
    default_cls = _to_class(ctx, default_ref) or cls
    return executor.check_template(value, default_cls, cls, excluded, scope)


def contract_owned(ctx: Any, value: Any, args: list, kwargs: dict) -> Any:
    obj = real_object(value)
    if obj is None:
        return value
    this = real_object(_scope(ctx).this)
    if not _owned_by(obj, this):
        raise _scope(ctx).violation(f"object {obj.id} is not owned by {this!r}")
    return value


def contract_not_owned(ctx: Any, value: Any, args: list, kwargs: dict) -> Any:
    obj = real_object(value)
    if obj is None:
        return value
    this = real_object(_scope(ctx).this)
    if _owned_by(obj, this):
        raise _scope(ctx).violation(f"object {obj.id} must not be owned by {this!r}")
    return value


def _owned_by(obj: MuranoObject, owner: MuranoObject | None) -> bool:
    current = obj.owner
    while current is not None:
        if current is owner:
            return True
        current = current.owner
    return False


FUNCTIONS = {
    "string": contract_string,
    "int": contract_int,
    "bool": contract_bool,
    "notNull": contract_not_null,
    "check": contract_check,
    "class": contract_class,
    "template": contract_template,
    "owned": contract_owned,
    "notOwned": contract_not_owned,
}
