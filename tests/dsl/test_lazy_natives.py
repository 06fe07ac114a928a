"""The core library's native classes are imported when their MuranoPL class is first built."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from murano_engine import system
from murano_engine.dsl.natives import NativeRegistry

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(system.NATIVE_CLASSES))
def test_every_entry_is_the_native_class_of_its_name(name: str) -> None:
    registry = NativeRegistry()
    system.register(registry)
    found = registry.get(name)
    assert found is not None and found.murano_name == name


def test_an_entry_naming_another_class_is_refused() -> None:
    registry = NativeRegistry()
    registry.add_lazy("io.murano.Object", "murano_engine.system.logger:Logger")
    with pytest.raises(TypeError, match="is not the native class of io.murano.Object"):
        registry.get("io.murano.Object")


def test_a_run_imports_only_the_native_classes_it_builds(tmp_path: Path) -> None:
    probe = ("import sys, runpy; sys.argv = ['murano-engine', 'run', '-l', sys.argv[1], "
             "'bench.workloads.Fib.fib', '--arg', 'n=3']\n"
             "try:\n    runpy.run_module('murano_engine.cli.main', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.startswith('murano_engine.system.')))")
    done = subprocess.run([sys.executable, "-c", probe, str(REPO / "benchmarks" / "workloads")],
                          env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)), text=True,
                          capture_output=True, check=True)
    assert done.stdout.splitlines() == ["2", "['murano_engine.system.core']"]
