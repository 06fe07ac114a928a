"""io.murano.test.TestFixture: assertions and model loading for package tests."""

from __future__ import annotations

from murano_engine.dsl import model, values
from murano_engine.dsl.natives import NativeCall, method, native_class

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


class AssertionFailed(AssertionError):
    """A MuranoPL assertion failed; the test runner reports it as FAIL."""

    murano_name = "murano.test.AssertionError"


def _fail(default: str, message: Any) -> None:
    raise AssertionFailed(f"{message}: {default}" if message else default)


def _same(expected: Any, observed: Any) -> bool:
    return values.freeze(expected) == values.freeze(observed)


@native_class("io.murano.test.TestFixture")
class TestFixture:
    @method
    def load(call: NativeCall, model_dict: Any) -> Any:
        return model.load_model(call.executor, values.thaw(model_dict)
                                if not isinstance(model_dict, dict) else model_dict)

    @method
    def startEnv(call: NativeCall) -> None:  # noqa: N802
        call.executor.services.setdefault("session", {})["started"] = True

    @method
    def finishEnv(call: NativeCall) -> None:  # noqa: N802
        call.executor.services.setdefault("session", {})["started"] = False

    @method
    def assertEqual(call: NativeCall, expected: Any, observed: Any,  # noqa: N802
                    message: Any = None) -> None:
        if not _same(expected, observed):
            _fail(f"{values.thaw(expected)!r} != {values.thaw(observed)!r}", message)

    @method
    def assertNotEqual(call: NativeCall, expected: Any, observed: Any,  # noqa: N802
                       message: Any = None) -> None:
        if _same(expected, observed):
            _fail(f"{values.thaw(expected)!r} == {values.thaw(observed)!r}", message)

    @method
    def assertTrue(call: NativeCall, expression: Any, message: Any = None) -> None:  # noqa: N802
        if not expression:
            _fail(f"{values.thaw(expression)!r} is not true", message)

    @method
    def assertFalse(call: NativeCall, expression: Any, message: Any = None) -> None:  # noqa: N802
        if expression:
            _fail(f"{values.thaw(expression)!r} is not false", message)

    @method
    def assertIn(call: NativeCall, needle: Any, haystack: Any,  # noqa: N802
                 message: Any = None) -> None:
        if values.freeze(needle) not in values.freeze(haystack):
            _fail(f"{values.thaw(needle)!r} not in {values.thaw(haystack)!r}", message)

    @method
    def assertNotIn(call: NativeCall, needle: Any, haystack: Any,  # noqa: N802
                    message: Any = None) -> None:
        if values.freeze(needle) in values.freeze(haystack):
            _fail(f"{values.thaw(needle)!r} unexpectedly in {values.thaw(haystack)!r}", message)
