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

from murano_engine.cli.test_mocks import MOCK_FUNCTIONS, mocking_interpreter  # noqa: F401
from murano_engine.dsl import errors
from murano_engine.dsl.budget import Budget
from murano_engine.dsl.classes import MethodSpec, MuranoClass
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.config import Config, load_config
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
    names = _names(cls, method)
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
    from murano_engine.cli.lifetime import long_lived
    config = load_config(options.config_file)
    with long_lived():  # as ``run`` loads its packages
        loader = PackageLoader(options.load_packages_from, mocking_interpreter())
    for problem in loader.problems:
        print(f"warning: {problem}", file=sys.stderr)
    every = find_tests(loader, options.package)
    if not every:
        print(f"error: no tests found in {options.package}", file=sys.stderr)
        return 2
    unknown = unmatched(every, options.tests)
    if unknown:
        print(f"error: {unknown_tests_message(every, unknown, options.package)}",
              file=sys.stderr)
        return 2
    tests = find_tests(loader, options.package, options.tests) if options.tests else every
    print(f"About to execute {_count(len(tests), 'test')}")
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
    print(f"Executed {_count(len(results), 'test')} in {time.perf_counter() - started:.2f} "
          f"seconds")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def unmatched(tests: list[tuple[MuranoClass, MethodSpec]], wanted: Iterable[str]) -> list[str]:
    """The words of ``wanted`` that select none of ``tests``."""
    return [w for w in wanted if not any(_selected(c, m, [w]) for c, m in tests)]


def unknown_tests_message(tests: list[tuple[MuranoClass, MethodSpec]], unknown: list[str],
                          package: str) -> str:
    """Names ``unknown`` selections with the nearest test each could mean, then lists the
    package's tests as they may be given (``Class.testMethod``)."""
    import difflib
    names = sorted({n for c, m in tests for n in _names(c, m)})
    shown = [f"{c.name.rsplit('.', 1)[-1]}.{m.name}" for c, m in tests]
    parts = []
    for word in unknown:
        near = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
        parts.append(f"{word} (did you mean {near[0]}?)" if near else word)
    what = "test or test class" if len(unknown) == 1 else "tests or test classes"
    return (f"{package} has no {what} {', '.join(parts)}; its tests: {', '.join(shown)}")


def _names(cls: MuranoClass, method: MethodSpec) -> set[str]:
    """What selects a test: its class (full or short name), its method, or both."""
    short = cls.name.rsplit(".", 1)[-1]
    return {cls.name, short, method.name, f"{cls.name}.{method.name}", f"{short}.{method.name}"}


def _count(number: int, word: str) -> str:
    """``1 test``, ``2 tests``."""
    return f"{number} {word}{'' if number == 1 else 's'}"


def console() -> NoReturn:
    """The ``murano-test-runner`` command."""
    from murano_engine.cli.lifetime import exit_now
    exit_now(main())


if __name__ == "__main__":
    console()
