"""The core library's native classes are imported when their MuranoPL class is first used."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from murano_engine import system
from murano_engine.dsl.interpreter import Interpreter
from murano_engine.dsl.natives import NativeRegistry
from murano_engine.dsl.packages import META_DIR, PackageLoader
from murano_engine.engine.interpreter import build_interpreter

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
    # printed at exit: a command's last act (exit_now) runs the atexit handlers
    probe = ("import atexit, sys, runpy; sys.argv = ['murano-engine', 'run', '-l', sys.argv[1], "
             "'bench.workloads.Fib.fib', '--arg', 'n=3']\n"
             "atexit.register(lambda: print(sorted(\n"
             "    m for m in sys.modules if m.startswith('murano_engine.system.'))))\n"
             "runpy.run_module('murano_engine.cli.main', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", probe, str(REPO / "benchmarks" / "workloads")],
                          env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)), text=True,
                          capture_output=True, check=True)
    assert done.stdout.splitlines() == ["2", "['murano_engine.system.core']"]


def test_building_every_core_class_imports_what_only_their_methods_use_when_called(
        tmp_path: Path) -> None:
    """Loading a package set builds the core library's classes with native halves
    (Logger, HeatStack, Agent, GC ...); the modules their methods need when called
    (logging, the clouds, hashlib, getpass) are imported then, not at the build."""
    probe = (
        "import sys\n"
        "from murano_engine.dsl.packages import META_DIR, PackageLoader\n"
        "from murano_engine.engine.interpreter import build_interpreter\n"
        "loader = PackageLoader([META_DIR], build_interpreter())\n"
        "built = [package.load_class(name) for versions in loader.packages.values()\n"
        "         for package in versions for name in package.class_files]\n"
        "print(len(built), sum(1 for cls in built if cls.native is not None or any(\n"
        "    m.native for m in cls.methods.values())))\n"
        "print(sorted(m for m in ('logging', 'hashlib', 'getpass', 'dataclasses',\n"
        "                         'murano_engine.clouds') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", probe],
                          env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)), text=True,
                          capture_output=True, check=True)
    classes, natives = map(int, done.stdout.splitlines()[0].split())
    assert classes > 40 and natives >= 10
    assert done.stdout.splitlines()[1] == "[]"


def test_a_built_class_imports_its_native_half_when_its_methods_are_first_read(
        tmp_path: Path) -> None:
    """Loading every class of a package set (a check, an upload) imports no native half;
    the first read of a class's methods or ``native`` does, and sees its native methods."""
    probe = (
        "import sys\n"
        "from murano_engine.dsl.packages import META_DIR, PackageLoader\n"
        "from murano_engine.engine.interpreter import build_interpreter\n"
        "loader = PackageLoader([META_DIR], build_interpreter())\n"
        "for versions in loader.packages.values():\n"
        "    for package in versions:\n"
        "        [package.load_class(name) for name in package.class_files]\n"
        "print(sorted(m for m in sys.modules if m.startswith('murano_engine.system.')))\n"
        "agent = loader.find_class('io.murano.system.Agent')\n"
        "print(agent.methods['call'].native is not None, agent.native is not None)\n"
        "print(sorted(m for m in sys.modules if m.startswith('murano_engine.system.')))\n")
    done = subprocess.run([sys.executable, "-c", probe],
                          env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)), text=True,
                          capture_output=True, check=True)
    assert done.stdout.splitlines() == ["[]", "True True", "['murano_engine.system.agent']"]


def _logger_half(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str,
                 preamble: str) -> Interpreter:
    """An interpreter whose io.murano.system.Logger half (a ``shout`` method) is module
    ``module`` in ``tmp_path``, running ``preamble`` as it is imported."""
    (tmp_path / f"{module}.py").write_text(
        preamble +
        "from murano_engine.dsl.natives import native_class, method\n"
        "@native_class('io.murano.system.Logger')\n"
        "class Logger:\n"
        "    def __init__(self, call):\n"
        "        pass\n"
        "    @method\n"
        "    def shout(call, text):\n"
        "        return text.upper()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    interpreter = build_interpreter()
    interpreter.natives.add_lazy("io.murano.system.Logger", f"{module}:Logger")
    return interpreter


def test_threads_reading_a_class_at_once_see_its_native_half_attached_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    interpreter = _logger_half(tmp_path, monkeypatch, "slow_native",
                               "import time\ntime.sleep(0.2)\n")
    cls = PackageLoader([META_DIR], interpreter).find_class("io.murano.system.Logger")
    barrier = threading.Barrier(4)
    seen: list[tuple[int, object]] = []

    def read() -> None:
        barrier.wait()
        methods = cls.methods
        seen.append((id(methods), methods["shout"].native))

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 4 and len(set(seen)) == 1 and seen[0][1] is not None
    assert cls.native is sys.modules["slow_native"].Logger


def test_a_native_half_whose_import_failed_once_is_imported_again_when_next_needed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker met this with tasks side by side: io.murano.Object's half failed to import
    once, and every later class of that name in the process was built without it
    ("method 'getAttr' is not found in io.murano.CloudRegion")."""
    interpreter = _logger_half(tmp_path, monkeypatch, "flaky_native", (
        "import pathlib\n"
        f"tried = pathlib.Path({str(tmp_path / 'tried')!r})\n"
        "if not tried.exists():\n"
        "    tried.touch()\n"
        "    raise ImportError('not this time')\n"))
    first = PackageLoader([META_DIR], interpreter).find_class("io.murano.system.Logger")
    with pytest.raises(ImportError, match="not this time"):
        first.methods  # noqa: B018 - the read attaches the half
    later = PackageLoader([META_DIR], interpreter).find_class("io.murano.system.Logger")
    assert later.methods["shout"].native is not None
    assert first.methods["shout"].native is not None  # the failed one tries again too


def test_import_all_imports_every_native_half_at_once() -> None:
    registry = NativeRegistry()
    system.register(registry)
    registry.import_all()
    assert not registry._lazy
    assert all(registry.get(name).murano_name == name for name in system.NATIVE_CLASSES)
