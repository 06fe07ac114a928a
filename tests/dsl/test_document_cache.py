"""Parsed class files and manifests kept between processes: keyed by content,
written atomically, never in the way."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from murano_engine.dsl import document_cache
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.expressions import Expression
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.interpreter import build_interpreter

REPO = Path(__file__).resolve().parents[2]

CLASS = """\
Namespaces:
  =: test.cache
Name: Counter
Properties:
  start:
    Contract: $.int().notNull()
    Default: {start}
Methods:
  count:
    Arguments:
      - n:
          Contract: $.int().notNull()
    Body:
      - Return: range($.start, $.start + $n).sum()
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "murano-engine" / "documents"


def _package(root: Path, start: int = 10) -> Path:
    folder = root / "packages" / "test.cache"
    (folder / "Classes").mkdir(parents=True, exist_ok=True)
    (folder / "manifest.yaml").write_text(
        "Format: 1.4\nType: Library\nFullName: test.cache\n"
        "Classes:\n  test.cache.Counter: Counter.yaml\n")
    (folder / "Classes" / "Counter.yaml").write_text(CLASS.format(start=start))
    return folder.parent


def _count(packages: Path, n: int) -> int:
    loader = PackageLoader([packages], build_interpreter())
    cls = loader.find_class("test.cache.Counter")
    executor = Executor(loader)
    return executor.call(executor.new_object(cls), "count", (n,))


def _entries(cache: Path) -> set[Path]:
    return set(cache.rglob("*.pickle")) if cache.exists() else set()


def test_a_second_load_reads_the_cache_and_runs_the_same(tmp_path: Path, cache: Path) -> None:
    packages = _package(tmp_path)
    assert _count(packages, 3) == 33
    written = _entries(cache)
    assert written  # the class file and the manifests
    before = {p: p.stat().st_mtime_ns for p in written}
    assert _count(packages, 3) == 33
    assert _entries(cache) == written
    assert {p: p.stat().st_mtime_ns for p in written} == before  # read, not rewritten


def test_the_cached_document_equals_a_fresh_parse_positions_included(
        tmp_path: Path, cache: Path) -> None:
    text = CLASS.format(start=1).encode()
    from murano_engine.dsl.expressions import try_parse
    from murano_engine.dsl.yaml_loader import load_documents
    fresh = load_documents(text, "Counter.yaml", try_parse)
    document_cache.cached("class", text, "Counter.yaml",
                          lambda: load_documents(text, "Counter.yaml", try_parse))
    again = document_cache.cached("class", text, "Counter.yaml",
                                  lambda: pytest.fail("parsed although cached"))
    contract = again[0]["Properties"]["start"]["Contract"]
    assert isinstance(contract, Expression)
    assert contract.position == fresh[0]["Properties"]["start"]["Contract"].position
    assert str(contract.node) == str(fresh[0]["Properties"]["start"]["Contract"].node)
    assert contract.node.engine is fresh[0]["Properties"]["start"]["Contract"].node.engine
    assert again[0].position == fresh[0].position
    assert repr(again) == repr(fresh)


def test_a_method_body_read_back_is_unpickled_when_the_method_is_first_compiled(
        tmp_path: Path, cache: Path) -> None:
    packages = _package(tmp_path)
    assert _count(packages, 3) == 33  # parses and writes the entry
    loader = PackageLoader([packages], build_interpreter())
    method = loader.find_class("test.cache.Counter").methods["count"]
    assert isinstance(method.body, document_cache.Deferred)
    assert method.body._blob is not None  # read back, not yet unpickled
    executor = Executor(loader)
    assert executor.call(executor.new_object(method.declaring_class), "count", (4,)) == 46
    assert isinstance(method.body, list) and "Return" in method.body[0]


def test_a_deferred_part_pickles_again_as_it_was_read(cache: Path) -> None:
    value = [{"Return": "$x"}, list(range(5))]
    read_back = pickle.loads(pickle.dumps(document_cache.Deferred(value)))
    kept = read_back._blob
    again = pickle.loads(pickle.dumps(read_back))
    assert read_back._blob is kept  # pickled from its blob, not unpickled for it
    assert read_back.get() == again.get() == value


def test_a_bad_body_read_back_fails_at_its_line_when_called(tmp_path: Path, cache: Path
                                                            ) -> None:
    from murano_engine.dsl.errors import LoadError
    packages = _package(tmp_path)
    path = packages / "test.cache" / "Classes" / "Counter.yaml"
    path.write_text(path.read_text().replace("- Return:", "- Retrun:"))
    for _ in range(2):  # parsed, then read back from the entry written
        with pytest.raises(LoadError, match=r"Counter.yaml:14:9: unknown instruction"):
            _count(packages, 1)
    assert _entries(cache)


def test_a_changed_file_is_parsed_again(tmp_path: Path, cache: Path) -> None:
    packages = _package(tmp_path, start=10)
    assert _count(packages, 2) == 21
    _package(tmp_path, start=100)
    assert _count(packages, 2) == 201


def test_the_same_bytes_under_another_name_are_another_entry(cache: Path) -> None:
    calls = []
    for name in ("a/manifest.yaml", "b/manifest.yaml", "a/manifest.yaml"):
        document_cache.cached("manifest", b"FullName: x\n", name,
                              lambda n=name: calls.append(n) or {"FullName": "x"})
    assert calls == ["a/manifest.yaml", "b/manifest.yaml"]


def test_a_damaged_entry_is_parsed_again_and_rewritten(cache: Path) -> None:
    document_cache.cached("manifest", b"a: 1\n", "m.yaml", lambda: {"a": 1})
    [entry] = _entries(cache)
    entry.write_bytes(b"\x80\x05not a pickle")
    assert document_cache.cached("manifest", b"a: 1\n", "m.yaml", lambda: {"a": 2}) == {"a": 2}
    assert pickle.loads(entry.read_bytes())[-1] == {"a": 2}


def test_an_entry_holding_other_bytes_under_the_same_name_is_not_used(cache: Path) -> None:
    document_cache.cached("manifest", b"a: 1\n", "m.yaml", lambda: {"a": 1})
    [entry] = _entries(cache)
    salt, head, data, result = pickle.loads(entry.read_bytes())
    for kept in [(salt, head, b"a: 9\n"), (salt, b"manifest\0other.yaml", data),
                 (b"other code", head, data)]:  # as a checksum collision would leave it
        entry.write_bytes(pickle.dumps((*kept, {"a": "stale"})))
        assert document_cache.cached("manifest", b"a: 1\n", "m.yaml", lambda: {"a": 2}) \
            == {"a": 2}


def test_an_unwritable_cache_costs_only_the_parse(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert document_cache.cached("manifest", b"a: 1\n", "m.yaml", lambda: {"a": 1}) == {"a": 1}
    assert document_cache.cached("manifest", b"a: 1\n", "m.yaml", lambda: {"a": 3}) == {"a": 3}


def test_writers_at_once_leave_one_whole_entry(cache: Path) -> None:
    big = {"items": list(range(200_000))}
    barrier = threading.Barrier(8)

    def write() -> None:
        barrier.wait()
        document_cache.cached("manifest", b"x", "m.yaml", lambda: big)

    threads = [threading.Thread(target=write) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    [entry] = _entries(cache)
    assert pickle.loads(entry.read_bytes())[-1] == big
    assert not [p for p in entry.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_bad_file_is_never_cached(tmp_path: Path, cache: Path) -> None:
    from murano_engine.dsl.errors import LoadError
    from murano_engine.dsl.yaml_loader import load_plain
    for _ in range(2):
        with pytest.raises(LoadError, match="malformed YAML"):
            document_cache.cached("manifest", b"a: [1\n", "m.yaml",
                                  lambda: load_plain(b"a: [1\n", "m.yaml"))
    assert not _entries(cache)


#: what a start-up that finds every file in the document cache does without: PyYAML,
#: yaql's parser, and standard modules whose imports cost more than their use here
_NOT_AT_WARM_START = ("yaml", "yaql._ply.yacc", "pathlib", "dataclasses", "tempfile", "pickle",
                      "shutil")


def _imported_by(tmp_path: Path, module: str, *argv: str) -> tuple[list[str], list[str]]:
    """What a cold and then a warm run of ``python -m module argv...`` print, and which of
    _NOT_AT_WARM_START each imported."""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    # printed at exit: a command's last act (exit_now) runs the atexit handlers
    probe = (f"import atexit, sys, runpy; sys.argv = [{module!r}, *sys.argv[1:]]\n"
             "atexit.register(lambda: print('imported:', *[\n"
             f"    m for m in {_NOT_AT_WARM_START!r} if m in sys.modules]))\n"
             f"runpy.run_module({module!r}, run_name='__main__')\n")
    runs = [subprocess.run([sys.executable, "-c", probe, *argv], env=env, text=True,
                           capture_output=True, check=True, cwd=tmp_path) for _ in range(2)]
    return [run.stdout.strip().splitlines() for run in runs]  # type: ignore[return-value]


def test_a_warm_run_imports_neither_pyyaml_nor_yaqls_parser(tmp_path: Path) -> None:
    workloads = str(REPO / "benchmarks" / "workloads")
    cold, warm = _imported_by(tmp_path, "murano_engine.cli.main", "run", "-l", workloads,
                              "bench.workloads.Fib.fib", "--arg", "n=5")
    assert cold[0] == warm[0] == "5"
    assert "yaml" in cold[-1] and "yaql._ply.yacc" in cold[-1]
    assert warm[-1] == "imported:"


def test_a_warm_test_run_makes_no_parser_for_the_functions_yaql_resolves(tmp_path: Path) -> None:
    workloads = str(REPO / "benchmarks" / "workloads")
    cold, warm = _imported_by(tmp_path, "murano_engine.cli.test_runner", "-l", workloads,
                              "bench.suite")
    assert cold[-2] == warm[-2] == "50 passed, 0 failed"
    assert warm[-1] == "imported:"


def test_pruning_removes_old_entries_and_keeps_recent_ones(cache: Path) -> None:
    document_cache.cached("manifest", b"old", "old.yaml", lambda: {"a": 1})
    document_cache.cached("manifest", b"new", "new.yaml", lambda: {"a": 2})
    [old] = [p for p in _entries(cache)
             if pickle.loads(p.read_bytes())[-1] == {"a": 1}]
    os.utime(old, (1_000_000, 1_000_000))
    assert document_cache.prune(2_000_000) == 1
    assert [pickle.loads(p.read_bytes())[-1] for p in _entries(cache)] == [{"a": 2}]
    assert document_cache.cached("manifest", b"old", "old.yaml", lambda: {"a": 3}) == {"a": 3}


def test_an_absent_cache_prunes_nothing(cache: Path) -> None:
    assert document_cache.prune(10**12) == 0


def test_a_write_with_the_pruning_prefix_prunes(cache: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    document_cache.cached("manifest", b"old", "old.yaml", lambda: {"a": 1})
    [old] = _entries(cache)
    os.utime(old, (1_000_000, 1_000_000))
    monkeypatch.setattr(document_cache, "PRUNE_PREFIX", "")  # every write prunes
    document_cache.cached("manifest", b"new", "new.yaml", lambda: {"a": 2})
    assert [pickle.loads(p.read_bytes())[-1] for p in _entries(cache)] == [{"a": 2}]
