"""The import graph's rules.

* The engine and the guest agent do not import each other; what both need is in
  ``murano_common``. Here every import counts, ``TYPE_CHECKING`` ones too.
* No import cycle among the modules of ``murano_engine``, ``murano_agent`` and
  ``murano_common``, counting imports inside functions and methods (those under
  ``TYPE_CHECKING``, for annotations only, excepted), nor among the engine's folders.
* ``dsl/`` imports nothing above it; ``api/`` imports neither the pages (``web/``)
  nor the server side's processes (``server/``); the worker imports nothing of
  ``api/``: :mod:`murano_engine.server.main` composes them.

``python -m tests.import_graph`` prints the layers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import import_graph
from tests.import_graph import module_name

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("murano_engine", "murano_agent")


def crossings(source: str, module: str, is_package: bool = False) -> set[str]:
    """The imported modules of ``source`` that belong to the other package."""
    own = module.split(".")[0]
    others = {p for p in PACKAGES if p != own}
    return {
        name
        for name in import_graph.imported_names(source, module, is_package, type_checking=True)
        if name.split(".")[0] in others
    }


def module_files() -> list[Path]:
    files = [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
    assert len(files) > 50, "the packages were not found"
    return files


def test_engine_and_agent_do_not_import_each_other() -> None:
    found: set[tuple[str, str]] = set()
    for path in module_files():
        source = path.read_text(encoding="utf-8")
        for name in crossings(source, module_name(path), path.name == "__init__.py"):
            found.add((path.relative_to(ROOT).as_posix(), name))
    assert not found, f"imports across the engine/agent boundary: {sorted(found)}"


@pytest.mark.parametrize(
    "source",
    [
        "import murano_agent.service\n",
        "from murano_agent import broker\n",
        "def f():\n    from murano_agent.config import load_config\n",
        "if TYPE_CHECKING:\n    import murano_agent as agent\n",
        "import importlib\nimportlib.import_module('murano_agent.service')\n",
    ],
)
def test_the_check_sees_every_kind_of_import(source: str) -> None:
    assert crossings(source, "murano_engine.messaging.client")
    assert crossings(source.replace("murano_agent", "murano_engine"), "murano_agent.service")


def test_the_check_resolves_relative_imports() -> None:
    assert crossings("from ...murano_agent import broker\n", "murano_engine.messaging.client")
    assert not crossings("from . import plans\n", "murano_engine.messaging.client")
    assert not crossings("from .client import AgentClient\n", "murano_engine.messaging", True)
    assert crossings("from murano_common import amqp\n", "murano_agent.service") == set()


# -- cycles and layers -------------------------------------------------------------

def test_no_import_cycle_among_modules() -> None:
    graph = import_graph.project_graph()
    assert len(graph) > 100, "the packages were not found"
    assert import_graph.cycles(graph) == []


def test_the_engines_folders_are_layers() -> None:
    folders = import_graph.folder_graph(import_graph.project_graph())
    assert import_graph.cycles(folders) == []
    placed = {f for level in import_graph.layers(folders) for f in level}
    assert placed == set(folders)


def _imports_of(prefix: str) -> set[tuple[str, str]]:
    graph = import_graph.project_graph()
    return {(module, other) for module, imported in graph.items()
            if module == prefix or module.startswith(prefix + ".") for other in imported}


def _reaching(edges: set[tuple[str, str]], *targets: str) -> list[tuple[str, str]]:
    return sorted((m, o) for m, o in edges
                  if any(o == t or o.startswith(t + ".") for t in targets))


def test_the_interpreter_imports_nothing_above_it() -> None:
    edges = _imports_of("murano_engine.dsl")
    assert edges, "dsl/ was not found"
    above = [(m, o) for m, o in edges
             if o.startswith("murano_engine") and not o.startswith("murano_engine.dsl")]
    assert above == []


def test_the_api_imports_neither_the_pages_nor_the_server_processes() -> None:
    edges = _imports_of("murano_engine.api")
    assert edges, "api/ was not found"
    assert _reaching(edges, "murano_engine.web", "murano_engine.server") == []


def test_the_worker_imports_nothing_of_the_api() -> None:
    edges = _imports_of("murano_engine.server.worker")
    assert edges, "the worker module was not found"
    assert _reaching(edges, "murano_engine.api", "murano_engine.web") == []


CYCLE_BY_A_LAZY_IMPORT = {
    "p": ("", True),
    "p.low": ("def f():\n    from p.high import g\n", False),
    "p.high": ("from p import low\n", False),
}


def test_a_cycle_made_on_purpose_is_found() -> None:
    """Through an import inside a function, as the rule counts them."""
    graph = import_graph.build(CYCLE_BY_A_LAZY_IMPORT)
    assert graph["p.low"] == {"p.high"} and graph["p.high"] == {"p.low"}
    assert import_graph.cycles(graph) == [["p.high", "p.low"]]
    assert import_graph.layers(graph) == [["p"]]


def test_a_type_checking_import_makes_no_cycle() -> None:
    sources = dict(CYCLE_BY_A_LAZY_IMPORT)
    sources["p.low"] = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                        "    from p.high import g\n", False)
    graph = import_graph.build(sources)
    assert import_graph.cycles(graph) == []
    assert import_graph.layers(graph) == [["p", "p.low"], ["p.high"]]


def test_a_cycle_in_the_project_would_fail_the_check(tmp_path: Path) -> None:
    """The project's own files with one lazy import added upward: a cycle."""
    for package in import_graph.PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            target = tmp_path / path.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    values = tmp_path / "murano_engine" / "dsl" / "values.py"
    values.write_text(values.read_text() + "\n\ndef _upward():\n"
                      "    from murano_engine.dsl import executor\n")
    found = import_graph.cycles(import_graph.project_graph(tmp_path))
    assert any("murano_engine.dsl.values" in part and "murano_engine.dsl.executor" in part
               for part in found)
