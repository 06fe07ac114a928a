"""The project's module graph, read from the source: who imports whom.

Every ``import``/``from`` statement counts wherever it is (module level, inside
functions and methods), and so does ``importlib.import_module``/``__import__``
with a literal name; imports under ``if TYPE_CHECKING:`` (annotations only) are
left out. ``from package import name`` counts as an import of the submodule
``package.name`` when there is one.

``python -m tests.import_graph`` prints the folders of ``murano_engine`` in
layers, lowest first (each imports only from layers below it), and any import
cycle among modules.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("murano_engine", "murano_agent", "murano_common")

Graph = dict[str, set[str]]


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def imported_names(source: str, module: str, is_package: bool = False,
                   type_checking: bool = False) -> set[str]:
    """Every dotted name ``source`` (the code of ``module``) imports, made absolute
    (``from a import b`` gives ``a.b``: the submodule ``b``, or a name in ``a``);
    imports under ``TYPE_CHECKING`` only with ``type_checking``."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking_only(child) and not type_checking:
                for other in child.orelse:  # type: ignore[attr-defined]
                    visit_one(other)
            else:
                visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            origin = ".".join([*base, *([node.module] if node.module else [])])
            found.update(f"{origin}.{alias.name}" for alias in node.names)
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Name) and node.func.id == "__import__")
                   or (isinstance(node.func, ast.Attribute)
                       and node.func.attr == "import_module"))):
            found.add(node.args[0].value)
        visit(node)

    visit(ast.parse(source))
    return found


def resolve(names: Iterable[str], known: set[str]) -> set[str]:
    """The project modules ``names`` stand for (the longest known prefix of each)."""
    modules = set()
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            modules.add(name)
    return modules


def build(sources: Mapping[str, tuple[str, bool]]) -> Graph:
    """The graph of ``sources`` (module name -> (code, is a package))."""
    known = set(sources)
    graph: Graph = {}
    for module, (source, is_package) in sources.items():
        found = resolve(imported_names(source, module, is_package), known)
        graph[module] = {m for m in found if m != module}
    return graph


def project_graph(root: Path = ROOT, packages: Iterable[str] = PACKAGES) -> Graph:
    sources = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            sources[module_name(path, root)] = (path.read_text(encoding="utf-8"),
                                                path.name == "__init__.py")
    return build(sources)


def cycles(graph: Graph) -> list[list[str]]:
    """The graph's strongly connected parts of more than one module (or a module
    importing itself), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1 or node in graph[node]:
                    found.append(sorted(part))
    return found


def folder_of(module: str) -> str:
    """``murano_engine.<folder>`` for the engine's modules, else the top package."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "murano_engine" and len(parts) > 1 else parts[0]


def folder_graph(graph: Graph) -> Graph:
    folders: Graph = {}
    for module, imported in graph.items():
        mine = folder_of(module)
        folders.setdefault(mine, set()).update(
            folder_of(other) for other in imported if folder_of(other) != mine)
    return folders


def layers(graph: Graph) -> list[list[str]]:
    """The nodes in layers, lowest first: each node's imports are in lower layers.
    Nodes on a cycle are left out (see :func:`cycles`)."""
    placed: dict[str, int] = {}
    remaining = set(graph)
    while remaining:
        ready = [n for n in remaining if all(d in placed for d in graph[n] if d in graph)]
        if not ready:
            break
        for node in ready:
            placed[node] = 1 + max((placed[d] for d in graph[node] if d in graph), default=-1)
        remaining -= set(ready)
    result: list[list[str]] = [[] for _ in range(max(placed.values(), default=-1) + 1)]
    for node, level in placed.items():
        result[level].append(node)
    return [sorted(level) for level in result]


def main() -> int:
    graph = project_graph()
    folders = folder_graph(graph)
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} imports "
          "(function-level ones too; TYPE_CHECKING ones left out)")
    print("folders in layers, lowest first (each imports only from layers below):")
    for number, level in enumerate(layers(folders)):
        for folder in level:
            below = sorted(folders[folder])
            print(f"  {number}  {folder:28} -> {', '.join(below) or '-'}")
    for part in cycles(folders):
        print("  folders importing each other:", " <-> ".join(part))
    found = cycles(graph)
    for part in found:
        print("cycle:", " <-> ".join(part))
    print(f"{len(found)} import cycle(s) among modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
