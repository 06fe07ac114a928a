"""yaql and semantic_version imported without metadata lookups: the same versions, pbr and
importlib.metadata left as they were."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from murano_engine.dsl import library_imports
from tests.dsl.dsl_helpers import REPO, class_text, write_package


@pytest.mark.parametrize("library", ["yaql", "semantic_version"])
def test_the_version_comes_from_the_installed_metadata(library: str) -> None:
    assert library_imports.installed_version(library) == version(library)


def _printed_by(probe: str) -> list[str]:
    """The words ``probe`` prints, run in a fresh Python process."""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    return done.stdout.split()


def test_a_library_without_metadata_beside_it_has_no_known_version() -> None:
    assert library_imports.installed_version("murano_engine") is None  # a source tree


def test_a_fresh_process_gets_both_with_their_versions_and_the_real_lookups_after() -> None:
    probe = ("import sys\n"
             "import murano_engine.dsl, yaql, semantic_version\n"
             "print(yaql.__version__, semantic_version.__version__,"
             " 'importlib.metadata' in sys.modules, 'pbr.version' in sys.modules)\n"
             "import pbr.version, importlib.metadata\n"
             "print(pbr.version.VersionInfo('yaql').version_string(),"
             " importlib.metadata.version('semantic_version'))\n")
    expected = [version("yaql"), version("semantic_version")]
    assert _printed_by(probe) == [*expected, "False", "False", *expected]


def test_yaqls_package_module_runs_on_first_use_of_its_names() -> None:
    probe = ("import sys\n"
             "import murano_engine.dsl\n"
             "from yaql.language import contexts\n"
             "from yaql import yaql_interface\n"
             "print('yaql.standard_library.date_time' in sys.modules)\n"
             "import yaql\n"
             "print(yaql.eval('len([1, 2]) + 1'), 'yaql.standard_library.date_time' in"
             " sys.modules, yaql.create_context is not None, hasattr(yaql, 'no_such_name'))\n"
             "import yaql.legacy\n"
             "print(len(yaql.legacy.create_context().collect_functions('#operator_=>')))\n")
    assert _printed_by(probe) == ["False", "3", "True", "True", "False", "1"]


def test_dateutils_tz_is_imported_on_first_use_and_is_what_yaql_gets() -> None:
    probe = ("import sys, datetime\n"
             "import murano_engine.dsl.executor\n"
             "print('dateutil.tz' in sys.modules)\n"
             "import yaql\n"
             "from yaql.standard_library import date_time\n"
             "from yaql.language import yaqltypes\n"
             "import dateutil.tz\n"
             "naive = yaqltypes.DateTime().convert(datetime.datetime(2020, 1, 1))\n"
             "print(naive.tzinfo is dateutil.tz.tzutc(), date_time.UTCTZ is dateutil.tz.tzutc(),"
             " yaqltypes.tz is dateutil.tz, yaql.eval('datetime(2020, 1, 2).day'))\n")
    assert _printed_by(probe) == ["False", "True", "True", "True", "2"]


def test_datetime_is_imported_when_yaqls_datetime_type_first_runs() -> None:
    probe = ("import sys\n"
             "import murano_engine.dsl.executor\n"
             "from yaql.language import yaqltypes\n"
             "print('datetime' in sys.modules)\n"
             "kind = yaqltypes.DateTime()\n"
             "import datetime\n"
             "print(kind.convert(datetime.datetime(2020, 1, 1)).tzinfo is not None,"
             " yaqltypes.datetime is datetime, kind.check(datetime.datetime(2020, 1, 1),"
             " None, None), kind.check(3, None, None))\n")
    assert _printed_by(probe) == ["False", "True", "True", "True", "False"]


def test_ordering_imports_no_query_library_of_yaqls(tmp_path: Path) -> None:
    """Code that calls no function of yaql's (arithmetic, method calls, the queries this
    engine runs itself: ``orderBy()``, ``thenBy()``, ``select()``, ``where()``) never
    imports ``yaql.standard_library.queries`` (with ``inspect``: a third of a start-up);
    what ``orderBy()`` made is a collection to the next query; ``list()`` is the engine's
    too, a function only yaql has (``takeWhile()``) imports its library, and ordering still
    works beside it."""
    write_package(tmp_path, "test.order", {"Sorter": class_text("test.order", "Sorter", """
        Methods:
          plain:
            Usage: Static
            Body:
              - Return: 2 * 3 - 4
          sorted:
            Usage: Static
            Arguments:
              - items: {Contract: [$]}
            Body:
              - Return: $items.orderBy($.k).thenByDescending($.n).select($.n).where($ != q)
          listed:
            Usage: Static
            Body:
              - Return: list(list(2, b), list(1, z), list(1, a)).takeWhile(true).orderBy(
                  $[0]).thenBy($[1]).select($[1])
        """)})
    probe = ("import sys\n"
             "from pathlib import Path\n"
             "from tests.dsl.dsl_helpers import run_method\n"
             "queries = 'yaql.standard_library.queries'\n"
             f"root = [Path({str(tmp_path)!r})]\n"
             "items = [{'k': 2, 'n': 'b'}, {'k': 1, 'n': 'a'}, {'k': 1, 'n': 'z'},"
             " {'k': 1, 'n': 'q'}]\n"
             "print(run_method(root, 'test.order.Sorter.plain'), queries in sys.modules)\n"
             "print(list(run_method(root, 'test.order.Sorter.sorted', items=items)),"
             " queries in sys.modules)\n"
             "print(list(run_method(root, 'test.order.Sorter.listed')), queries in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, cwd=REPO, env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)))
    assert done.stdout.splitlines() == ["2 False", "['z', 'a', 'b'] False",
                                        "['a', 'z', 'b'] True"]


def test_eventlet_is_imported_without_pyopenssl_which_stays_importable() -> None:
    probe = ("import sys\n"
             "from murano_engine.dsl import concurrency\n"
             "concurrency.setup()\n"
             "print('OpenSSL' in sys.modules, 'cryptography.x509' in sys.modules)\n"
             "concurrency.sleep(0)\n"
             "import OpenSSL.SSL\n"
             "print(OpenSSL.SSL.Context is not None)\n")
    assert _printed_by(probe) == ["False", "False", "True"]


def test_eventlet_runs_green_threads_without_importing_asyncio() -> None:
    """eventlet's patcher names asyncio only for its asyncio hub: a run's green threads
    (``pselect()``) import none of it, and asyncio is whole once asked for."""
    probe = ("import sys\n"
             "import murano_engine.dsl.executor\n"
             "from murano_engine.dsl import concurrency\n"
             "print(sum(concurrency.run_all([lambda: 1, lambda: concurrency.sleep(0) or 2])))\n"
             "print('asyncio' in sys.modules, 'eventlet.patcher' in sys.modules)\n"
             "import eventlet.patcher\n"
             "print(eventlet.patcher.asyncio_module.get_event_loop_policy is not None)\n"
             "import asyncio\n"
             "print(asyncio.run(asyncio.sleep(0, 'ran')))\n")
    assert _printed_by(probe) == ["3", "False", "True", "True", "ran"]


def test_a_methods_lock_keeps_green_threads_apart_when_eventlet_was_imported_first(
        tmp_path: Path) -> None:
    """A method locks its receiver by default: three ``pselect()`` branches calling it run
    it one after another, also where a library (or a test harness) imported eventlet
    before the engine did (its green threads were then all taken for one thread)."""
    write_package(tmp_path, "test.locks", {"Host": class_text("test.locks", "Host", """
        Properties:
          trace: {Contract: [$.string()], Usage: InOut}
        Methods:
          isolated:
            Arguments:
              - call: {Contract: $.int()}
            Body:
              - $.trace: $.trace + [format('{0}-before', $call)]
              - sleep(0)
              - $.trace: $.trace + [format('{0}-after', $call)]
          run:
            Body:
              - $.trace: []
              - list(1, 2, 3).pselect($this.isolated($))
              - Return: $.trace
        """)})
    probe = ("import eventlet\n"
             "from pathlib import Path\n"
             "from tests.dsl.dsl_helpers import run_method\n"
             f"print(*run_method([Path({str(tmp_path)!r})], 'test.locks.Host.run'))\n")
    trace = _printed_by(probe)
    assert sorted(trace) == sorted(f"{n}-{when}" for n in "123" for when in ("before", "after"))
    for before, after in zip(trace[::2], trace[1::2], strict=True):
        assert (before.endswith("-before"), after) == (True, before[0] + "-after")


def test_yaqls_specs_import_inspect_when_a_yaql_function_is_first_defined() -> None:
    probe = ("import sys\n"
             "import murano_engine.dsl.executor\n"
             "from yaql.language import specs\n"
             "print('inspect' in sys.modules)\n"
             "@specs.parameter('n', int)\n"
             "def twice(n):\n"
             "    return 2 * n\n"
             "import yaql\n"
             "context = yaql.create_context()\n"
             "context.register_function(twice)\n"
             "engine = yaql.factory.YaqlFactory().create()\n"
             "print(engine('twice(len([1, 2, 3]))').evaluate(context=context),"
             " specs.inspect is sys.modules['inspect'])\n")
    assert _printed_by(probe) == ["False", "6", "True"]


def test_loading_every_class_from_the_cache_imports_no_yaql_then_a_run_works(
        tmp_path: Path) -> None:
    """Loading a package set's classes (declarations, contracts kept as read back) needs
    neither yaql nor the compiler nor Murano's function tables, nor ``typing``, nor
    semantic_version (plain versions); the first method run after it imports what it
    needs and computes as usual."""
    probe = (
        "import sys\n"
        "from murano_engine.dsl.packages import META_DIR, PackageLoader\n"
        "from murano_engine.engine.interpreter import build_interpreter\n"
        "loader = PackageLoader([META_DIR, sys.argv[1]], build_interpreter())\n"
        "built = [p.load_class(n) for vs in loader.packages.values()\n"
        "         for p in vs for n in p.class_files]\n"
        "print(len(built) > 90, sorted(m for m in sys.modules if m.startswith('yaql.')),\n"
        "      'murano_engine.dsl.compiler' in sys.modules, 'murano_engine.dsl.runtime' in\n"
        "      sys.modules, 'typing' in sys.modules, 'semantic_version' in sys.modules)\n"
        "from murano_engine.dsl.executor import Executor\n"
        "calc = loader.find_class('test.lazy.Calc')\n"
        "print(Executor(loader).invoke(calc.find_method('area'), calc.ref, [], {'w': 3, 'h': 4},"
        " None))\n")
    write_package(tmp_path / "packages", "test.lazy", {"Calc": class_text("test.lazy", "Calc", """
        Properties:
          unit:
            Contract: $.string().notNull()
            Default: cm
        Methods:
          area:
            Usage: Static
            Arguments:
              - w: {Contract: $.int().notNull()}
              - h: {Contract: $.int().check($ > 0)}
            Body:
              - Return: $w * $h
        """)})
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, "-c", probe, str(tmp_path / "packages")],
                           capture_output=True, text=True, check=True, cwd=REPO, env=env)
            for _ in ("parsed and written to the cache", "read back")]
    assert runs[1].stdout.splitlines() == ["True [] False False False False", "12"]
    assert runs[0].stdout.splitlines()[1] == "12"


def test_a_run_imports_neither_typing_nor_locale(tmp_path: Path) -> None:
    """The interpreter's modules name typing's types for type checkers only: importing
    typing (about a tenth of a run's start-up) is left to code that needs it. argparse's
    own words are used as written, without gettext's lookups (which import locale)."""
    probe = ("import atexit, sys, runpy; sys.argv = ['murano-engine', 'run', '-l', sys.argv[1], "
             "'bench.workloads.Fib.fib', '--arg', 'n=3']\n"
             "atexit.register(lambda: print('typing' in sys.modules, 'locale' in sys.modules))\n"
             "runpy.run_module('murano_engine.cli.main', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", probe, str(REPO / "benchmarks" / "workloads")],
                          env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)), text=True,
                          capture_output=True, check=True)
    assert done.stdout.splitlines() == ["2", "False False"]


def test_greenlet_waits_for_the_first_green_threads_and_locks_keep_their_owner(
        tmp_path: Path) -> None:
    """A fresh process runs methods without greenlet (a C++ library) loaded; the first
    ``Parallel`` imports it while the calling method holds its object's lock, and the
    same method called again after it (a recursion) is still that lock's owner's call
    (with an owner that changed identity it would wait for itself, for ever), while
    the green threads of the ``Parallel`` are callers of their own."""
    write_package(tmp_path, "test.green", {"Counter": class_text("test.green", "Counter", """
        Properties:
          seen: {Contract: [$.string()], Usage: Runtime, Default: []}
        Methods:
          count:
            Arguments:
              - n: {Contract: $.int().notNull()}
            Body:
              - If: $n = 2
                Then:
                  - Parallel:
                      - $.note(a)
                      - $.note(b)
              - If: $n > 0
                Then:
                  - Return: $.count($n - 1) + 1
              - Return: len($.seen)
          note:
            Arguments:
              - word: {Contract: $.string()}
            Body:
              - $.seen: $.seen + [$word]
        """)})
    probe = ("import sys\n"
             "from pathlib import Path\n"
             "from tests.dsl.dsl_helpers import run_method\n"
             "from murano_engine.dsl import concurrency\n"
             f"root = [Path({str(tmp_path)!r})]\n"
             "print(run_method(root, 'test.green.Counter.count', n=0), 'greenlet' in sys.modules)\n"
             "print(run_method(root, 'test.green.Counter.count', n=3), 'greenlet' in sys.modules)\n"
             "concurrency.setup()\n"
             "print(run_method(root, 'test.green.Counter.count', n=3))\n"
             "import threading\n"
             "here, there = concurrency.current(), []\n"
             "thread = threading.Thread(target=lambda: there.append(concurrency.current()))\n"
             "thread.start(); thread.join()\n"
             "print(here != there[0])\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, cwd=REPO, timeout=60,
                          env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)))
    assert done.stdout.split() == ["0", "False", "5", "True", "5", "True"]
