"""Run Murano's own MuranoPL unit tests against this engine.

Usage::

    python3 -m tests.murano_unit.run MURANO_CHECKOUT [-v] [-k SUBSTRING]

``MURANO_CHECKOUT`` is a checkout of openstack/murano (the test files live in
``murano/tests/unit/dsl``; the last release before the repository was retired
has them). The class files of ``meta/`` become a Format 1.0 package
``tests`` in a temporary folder, the Python harness they import is replaced by
:mod:`tests.murano_unit.shim`, and every test that drives only MuranoPL runs
unchanged. Tests that exercise Murano's Python internals are left out (see
:data:`LEFT_OUT`). Prints each failure and the pass count.

This is a checking tool, not part of the test suite: it needs Murano's files,
which the repository does not carry.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
import traceback
import unittest
from pathlib import Path

from murano_engine.dsl.classes import NamespaceResolver
from murano_engine.dsl.yaml_loader import load_documents

from . import shim

#: whole test files about Murano's Python internals (its helpers, context manager,
#: session storage, attribute store, schema generator, agent and logger classes, and
#: the package loader's calls, which the tests mock)
LEFT_OUT_FILES = {
    "test_helpers", "test_context_manager", "test_session_local_storage",
    "test_attribute_store", "test_schema_generation", "test_agent", "test_logger",
    "test_versioning",
}
#: single tests that need Python classes registered into Murano, its key manager,
#: Python warnings, or the layout of its Python tracebacks
LEFT_OUT = {
    "test_engine_yaql_functions.TestEngineYaqlFunctions.test_decrypt_data",
    "test_engine_yaql_functions.TestEngineYaqlFunctions.test_decrypt_data_not_configured",
    "test_statics.TestStatics.test_call_python_static_method",
    "test_statics.TestStatics.test_call_python_classmethod",
    "test_extension_methods.TestExtensionMethods.test_call_python_extension",
    "test_extension_methods.TestExtensionMethods.test_call_python_extension_explicitly",
    "test_extension_methods.TestExtensionMethods.test_call_python_classmethod_extension",
    "test_exceptions.TestExceptions.test_stack_trace",
    "test_find_class.TestFindClass.test_find_class_with_prefix",
}


def build_package(meta_dir: Path, target: Path) -> Path:
    """A Format 1.0 package ``tests`` holding every class file of ``meta_dir``."""
    package = target / shim.TEST_PACKAGE
    (package / "Classes").mkdir(parents=True)
    classes: dict[str, str] = {}
    for path in sorted(meta_dir.glob("*.yaml")):
        shutil.copy(path, package / "Classes" / path.name)
        resolver = NamespaceResolver(None, None)
        for doc in load_documents(path.read_bytes(), str(path), None):
            if not isinstance(doc, dict):
                continue
            if "Namespaces" in doc:
                resolver = NamespaceResolver(doc["Namespaces"], None)
            if "Name" in doc:
                classes[resolver.resolve(str(doc["Name"]))] = path.name
    lines = ["Format: 1.0", "Type: Library", f"FullName: {shim.TEST_PACKAGE}", "Classes:"]
    lines += [f"  {name}: {file}" for name, file in sorted(classes.items())]
    (package / "manifest.yaml").write_text("\n".join(lines) + "\n")
    return package


def load_tests(dsl_dir: Path) -> list[unittest.TestCase]:
    """Every test of ``dsl_dir``'s test files that is not left out."""
    found: list[unittest.TestCase] = []
    for path in sorted(dsl_dir.glob("test_*.py")):
        if path.stem in LEFT_OUT_FILES:
            continue
        name = f"murano.tests.unit.dsl.{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        suite = unittest.defaultTestLoader.loadTestsFromModule(module)
        for test in _flatten(suite):
            if _short_id(test) not in LEFT_OUT:
                found.append(test)
    return found


def _flatten(suite: unittest.TestSuite) -> list[unittest.TestCase]:
    out: list[unittest.TestCase] = []
    for item in suite:
        out.extend(_flatten(item) if isinstance(item, unittest.TestSuite) else [item])
    return out


def _short_id(test: unittest.TestCase) -> str:
    return test.id().removeprefix("murano.tests.unit.dsl.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a checkout of openstack/murano")
    parser.add_argument("-k", dest="select", default="", help="run tests whose id has this")
    parser.add_argument("-v", dest="verbose", action="store_true", help="full tracebacks")
    options = parser.parse_args(argv)
    dsl_dir = options.checkout / "murano" / "tests" / "unit" / "dsl"
    shim.install()
    failures: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="murano-unit-") as tmp:
        shim.PACKAGE_DIRS[:] = [build_package(dsl_dir / "meta", Path(tmp))]
        tests = [t for t in load_tests(dsl_dir) if options.select in _short_id(t)]
        for test in tests:
            result = unittest.TestResult()
            test.run(result)
            for _, text in result.errors + result.failures:
                failures.append((_short_id(test), text))
    for name, text in failures:
        lines = text.rstrip().splitlines()
        detail = text if options.verbose else lines[-1][:300]
        print(f"FAIL {name}: {detail}")
    print(f"{len(tests) - len(failures)}/{len(tests)} passed")
    return 0 if not failures else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # noqa: BLE001 - show the harness's own failure plainly
        traceback.print_exc()
        sys.exit(2)
