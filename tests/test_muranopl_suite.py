"""The MuranoPL conformance suite (tests/muranopl), one pytest item per MuranoPL test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from murano_engine.cli.test_runner import find_tests, mocking_interpreter, run_test
from murano_engine.dsl.packages import PackageLoader

SUITE = Path(__file__).parent / "muranopl"
LOADER = PackageLoader([SUITE], mocking_interpreter())
PACKAGES = sorted(name for name in LOADER.packages if name.startswith("conformance.")
                  and find_tests(LOADER, name))
CASES = [(cls, method) for name in PACKAGES for cls, method in find_tests(LOADER, name)]


@pytest.mark.parametrize(("cls", "method"), CASES,
                         ids=[f"{c.name}.{m.name}" for c, m in CASES])
def test_conformance(cls, method):
    result = run_test(LOADER, cls, method)
    assert result.passed, result.detail


def test_suite_is_not_empty():
    assert len(CASES) > 100
    assert not LOADER.problems


def test_runner_command_reports_and_exits_nonzero_on_failure(tmp_path):
    package = tmp_path / "pkg"
    (package / "Classes").mkdir(parents=True)
    (package / "manifest.yaml").write_text(
        "Format: 1.4\nType: Library\nFullName: t.runner\nClasses:\n  t.runner.T: T.yaml\n")
    (package / "Classes" / "T.yaml").write_text(
        "Namespaces:\n  =: t.runner\n  test: io.murano.test\n"
        "Name: T\nExtends: test:TestFixture\nMethods:\n"
        "  testPasses:\n    Body:\n      - $.assertEqual(2, 1 + 1)\n"
        "  testFails:\n    Body:\n      - $.assertEqual(3, 1 + 1)\n")
    done = subprocess.run([sys.executable, "-m", "murano_engine.cli.test_runner", "t.runner",
                           "-l", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "t.runner.T.testPasses ..... OK" in done.stdout
    assert "t.runner.T.testFails ..... FAIL!" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "1 passed, 1 failed"
    only = subprocess.run([sys.executable, "-m", "murano_engine.cli.test_runner", "t.runner",
                           "T.testPasses", "-l", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert only.returncode == 0
    assert only.stdout.strip().splitlines()[-1] == "1 passed, 0 failed"
