"""``murano-test-runner``: run a package's MuranoPL tests (Murano's interface).

Every class of the package that extends ``io.murano.test.TestFixture`` is a
test case; its own methods named ``test...`` are the tests. Each test gets a
fresh executor and fixture object: ``.init``, ``setUp``, the test,
``tearDown``. Mocks (``inject``) live only as long as their test.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Iterable

from murano_engine.dsl import errors, values
from murano_engine.dsl.budget import Budget
from murano_engine.dsl.classes import MethodSpec, MuranoClass
from murano_engine.dsl.contexts import DslContext, frame_of
from murano_engine.dsl.executor import Executor, Frame
from murano_engine.dsl.interpreter import Interpreter
from murano_engine.dsl.objects import TypeRef, real_object
from murano_engine.dsl.packages import PackageLoader
from murano_engine.dsl.runtime import FunctionSpec
from murano_engine.engine.config import Config, load_config
from murano_engine.engine.interpreter import build_interpreter
from murano_engine.system.test_fixture import AssertionFailed

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any, NoReturn

FIXTURE = "io.murano.test.TestFixture"
_TEST_NAME = re.compile(r"^test(?![a-z])")


class TestResult:
    """One test's outcome: "OK", "FAIL" or "ERROR", what failed, how long it ran."""

    __slots__ = ("name", "outcome", "detail", "seconds")

    def __init__(self, name: str, outcome: str, detail: str = "", seconds: float = 0.0) -> None:
        self.name = name
        self.outcome = outcome
        self.detail = detail
        self.seconds = seconds

    @property
    def passed(self) -> bool:
        return self.outcome == "OK"


def find_tests(loader: PackageLoader, package_name: str,
               selection: Iterable[str] = ()) -> list[tuple[MuranoClass, MethodSpec]]:
    """The (fixture class, test method) pairs of a package, filtered by selection."""
    name, _, version = package_name.partition("/")
    package = loader.find_package(name, version or "*")
    fixture = loader.find_class(FIXTURE)
    tests = []
    for cls in package.classes():
        if cls is fixture or not cls.is_compatible(fixture):
            continue
        for method_name in sorted(cls.methods):
            if _TEST_NAME.match(method_name):
                tests.append((cls, cls.methods[method_name]))
    wanted = list(selection)
    if wanted:
        tests = [(c, m) for c, m in tests if _selected(c, m, wanted)]
    return tests


def _selected(cls: MuranoClass, method: MethodSpec, wanted: list[str]) -> bool:
    short = cls.name.rsplit(".", 1)[-1]
    names = {cls.name, short, method.name, f"{cls.name}.{method.name}",
             f"{short}.{method.name}"}
    return any(w in names for w in wanted)


def run_test(loader: PackageLoader, cls: MuranoClass, method: MethodSpec,
             config: Config | None = None) -> TestResult:
    """Run one test method (with setUp and tearDown) within the budget ``config`` gives
    (default: the defaults and ``MURANO_ENGINE_*`` variables)."""
    label = f"{cls.name}.{method.name}"
    started = time.perf_counter()
    executor = Executor(loader, budget=Budget.from_config(config or load_config()))
    try:
        fixture = executor.new_object(cls)
        _call_if_present(executor, fixture, "setUp")
        try:
            executor.invoke(method, fixture, [], {}, None)
        finally:
            _call_if_present(executor, fixture, "tearDown")
    except AssertionFailed as exc:
        return TestResult(label, "FAIL", _describe(exc), time.perf_counter() - started)
    except Exception as exc:  # noqa: BLE001 - any error fails the test with its trace
        return TestResult(label, "ERROR", _describe(exc), time.perf_counter() - started)
    return TestResult(label, "OK", "", time.perf_counter() - started)


def _call_if_present(executor: Executor, fixture: Any, name: str) -> None:
    if fixture.murano_class.find_method(name) is not None:
        executor.call(fixture, name)


def _describe(exc: BaseException) -> str:
    stack = errors.stack_of(exc)
    text = f"{errors.python_name(exc)}: {getattr(exc, 'message', None) or exc}"
    if stack:
        text += "\n" + errors.format_stack(stack)
    return text


# -- mocks ---------------------------------------------------------------------------

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


# -- command line ----------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    from murano_engine.cli import main as cli
    parser = argparse.ArgumentParser(
        prog="murano-test-runner", formatter_class=cli.HelpFormatter,
        description="Run the MuranoPL tests (TestFixture classes) of a package.")
    parser.add_argument("package", nargs="?", help="package FullName, optionally /version")
    parser.add_argument("tests", nargs="*", help="Class, Class.testMethod or testMethod")
    parser.add_argument("-l", "--load-packages-from", nargs="+", action="extend", default=[],
                        metavar="DIR", help="folders holding packages")
    cli.add_config_option(parser, "engine configuration (INI; optional: its [engine] "
                                  "budgets apply to each test)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print timings")
    options = parser.parse_args(argv)
    moved = cli.split_load_dirs(options.load_packages_from, [])
    if options.package:  # given before -l: what -l took are folders, or Class.method tests
        for word in moved:
            if "." not in word:
                parser.exit(2, f"error: {word}: package folder does not exist\n")
        words = [options.package, *options.tests, *moved]
    else:
        words = moved + options.tests
    if not words:
        parser.error("the package FullName is required")
    options.package, options.tests = words[0], words[1:]
    if os.path.exists(options.package):
        parser.exit(2, f"error: {_path_hint(options.package)}\n")
    return cli.run_guarded(lambda: _run(options), debug=options.verbose)


def _path_hint(path: str) -> str:
    """What to type instead of a package's path: its FullName, its folder with ``-l``."""
    full_name = "PACKAGE_FULL_NAME"
    try:
        from murano_engine.dsl.yaml_loader import load_plain
        with open(os.path.join(path, "manifest.yaml"), "rb") as stream:
            manifest = load_plain(stream.read(), path)
        if isinstance(manifest, dict) and isinstance(manifest.get("FullName"), str):
            full_name = manifest["FullName"]
    except Exception:  # noqa: BLE001 - only the hint loses the name
        pass
    folder = os.path.dirname(os.path.realpath(path))
    return (f"{path} is a path; name the package and give the folder holding it with -l: "
            f"murano-test-runner {full_name} -l {os.path.relpath(folder)}")


def _run(options: argparse.Namespace) -> int:
    from murano_engine.cli.main import long_lived
    config = load_config(options.config_file)
    with long_lived():  # as ``run`` loads its packages
        loader = PackageLoader(options.load_packages_from, mocking_interpreter())
    for problem in loader.problems:
        print(f"warning: {problem}", file=sys.stderr)
    tests = find_tests(loader, options.package, options.tests)
    if not tests:
        print(f"error: no tests found in {options.package}", file=sys.stderr)
        return 2
    print(f"About to execute {len(tests)} test(s)")
    started = time.perf_counter()
    results = []
    for cls, method in tests:
        result = run_test(loader, cls, method, config)
        results.append(result)
        status = "OK" if result.passed else "FAIL!"
        timing = f" ({result.seconds * 1000:.1f} ms)" if options.verbose else ""
        print(f"{result.name} ..... {status}{timing}")
        if not result.passed:
            print("    " + result.detail.replace("\n", "\n    "))
    passed = sum(r.passed for r in results)
    failed = len(results) - passed
    print(f"Executed {len(results)} tests in {time.perf_counter() - started:.2f} seconds")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def console() -> NoReturn:
    """The ``murano-test-runner`` command."""
    from murano_engine.cli.main import exit_now
    exit_now(main())


if __name__ == "__main__":
    console()
