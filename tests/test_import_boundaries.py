"""The engine and the guest agent do not import each other; what both need is in
``murano_common``.

Every module file of both packages is parsed; every ``import``/``from`` statement
counts, wherever it is (module level, inside functions, under ``TYPE_CHECKING``),
and so does ``importlib.import_module``/``__import__`` with a literal name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("murano_engine", "murano_agent")

def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module name ``source`` (the code of ``module``) imports, made absolute."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            found.add(".".join([*base, *([node.module] if node.module else [])]))
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and (
                (isinstance(node.func, ast.Name) and node.func.id == "__import__")
                or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
            )
        ):
            found.add(node.args[0].value)
    return found


def crossings(source: str, module: str, is_package: bool = False) -> set[str]:
    """The imported modules of ``source`` that belong to the other package."""
    own = module.split(".")[0]
    others = {p for p in PACKAGES if p != own}
    return {
        name
        for name in imported_modules(source, module, is_package)
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
