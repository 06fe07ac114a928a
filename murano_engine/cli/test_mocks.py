"""The functions MuranoPL tests mock with (``inject``, ``originalMethod``,
``withOriginal``), and the interpreter that has them: the test runner's, and
``validate``'s (a package's tests call them)."""

from __future__ import annotations

from murano_engine.dsl import errors, values
from murano_engine.dsl.classes import MethodSpec
from murano_engine.dsl.contexts import DslContext, frame_of
from murano_engine.dsl.executor import Executor, Frame
from murano_engine.dsl.interpreter import Interpreter
from murano_engine.dsl.objects import TypeRef, real_object
from murano_engine.dsl.runtime import FunctionSpec
from murano_engine.engine.interpreter import build_interpreter

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


def _target_class_name(target: Any) -> str:
    if isinstance(target, TypeRef):
        return target.murano_class.name
    obj = real_object(target)
    if obj is not None:
        return obj.murano_class.name
    return str(target)


def inject(ctx: Any, target: Any, args: list, kwargs: dict) -> None:
    """``inject(target, method, mockObject, mockName)`` or ``inject(target, method, expr)``."""
    frame = frame_of(ctx)
    executor = frame.executor
    if not args:
        raise errors.NoMatchingMethodException("inject() needs a method name")
    class_name = frame.murano_class.resolve_name(_target_class_name(target)) \
        if isinstance(target, str) else _target_class_name(target)
    method_name = str(args[0](ctx))
    if len(args) >= 3:
        mock_object, mock_name = args[1](ctx), str(args[2](ctx))

        def object_mock(executor: Executor, method: MethodSpec, receiver: Any, call_args: list,
                        call_kwargs: dict, caller: Frame | None) -> Any:
            return executor.call(mock_object, mock_name, call_args, call_kwargs, caller)

        executor.mocks[(class_name, method_name)] = object_mock
        return
    expression = args[1]

    def expression_mock(executor: Executor, method: MethodSpec, receiver: Any, call_args: list,
                        call_kwargs: dict, caller: Frame | None) -> Any:
        original = Frame(executor, method, receiver, method.declaring_class, caller)
        if method.native is None:
            executor.bind_arguments(method, original, call_args, call_kwargs)
        mock_ctx = DslContext(ctx)
        for key, value in original.context._data.items():
            if key not in ("$1", "$this"):
                mock_ctx[key] = value
        mock_ctx["?originalCall"] = (method, receiver, call_args, call_kwargs, caller)
        mock_ctx["?originalContext"] = original.context
        return values.freeze(expression(mock_ctx))

    executor.mocks[(class_name, method_name)] = expression_mock


def original_method(ctx: Any) -> Any:
    call = ctx.get_data("?originalCall")
    if call is None:
        raise errors.DslInvalidOperationError("originalMethod() works only inside a mock")
    method, receiver, args, kwargs, caller = call
    return frame_of(ctx).executor.invoke(method, receiver, args, kwargs, caller, mocked=False)


def with_original(ctx: Any, first: Any, args: list, kwargs: dict) -> Any:
    original = ctx.get_data("?originalContext")
    if original is None:
        raise errors.DslInvalidOperationError("withOriginal() works only inside a mock")
    child = DslContext(ctx)
    for name, evaluator in kwargs.items():
        child[name] = evaluator(original)
    return child


MOCK_FUNCTIONS = {
    "inject": FunctionSpec(inject, raw=True),
    "originalMethod": FunctionSpec(original_method, method=False),
    "withOriginal": FunctionSpec(with_original, method=False, raw=True),
}


def mocking_interpreter() -> Interpreter:
    """The engine's interpreter with the mocking functions tests use."""
    return build_interpreter(functions=MOCK_FUNCTIONS)
