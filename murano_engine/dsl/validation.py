"""``murano-engine validate``: every problem of a package, each with its place."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from yaql.language import expressions as ast

from murano_engine.dsl import compiler, errors
from murano_engine.dsl.document_cache import Deferred
from murano_engine.dsl.errors import LoadError
from murano_engine.dsl.expressions import Expression, parse
from murano_engine.dsl.hot import TEMPLATE
from murano_engine.dsl.interpreter import Interpreter
from murano_engine.dsl.packages import (
    HotPackage,
    Package,
    PackageLoader,
    open_source,
    read_manifest,
)
from murano_engine.dsl.runtime import Runtime
from murano_engine.dsl.yaml_loader import position_of

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


def validate_package(path: Path, interpreter: Interpreter,
                     search_dirs: Iterable[Path] = ()) -> list[str]:
    """Check the manifest, every class, every method body and every expression.

    The package at ``path`` is the one checked even where ``search_dirs`` hold
    another copy of it (its source folder beside its zip, say): it is added first."""
    loader = PackageLoader((), interpreter)
    try:
        package = loader.add(path)
        for directory in search_dirs:
            loader.scan(directory)
    except errors.LoadErrors as exc:
        return [str(p) for p in exc.problems]
    except LoadError as exc:
        return [str(exc)]
    if isinstance(package, HotPackage):
        return _check_hot(package)
    problems: list[str] = []
    for name, relpath in sorted(package.class_files.items()):
        where = package.source.display(f"Classes/{relpath}")
        if not package.source.exists(f"Classes/{relpath}"):
            problems.append(f"{where}: class file of {name} is missing")
            continue
        problems.extend(_check_class(package, name, where))
    return problems


def package_warnings(path: Path) -> list[str]:
    """What the engine accepts but Murano's client-side package check refuses, so a
    package that passes ``validate`` can still fail in ``murano package-import``."""
    try:
        source = open_source(path)
        manifest = read_manifest(source)
    except (LoadError, errors.LoadErrors):
        return []  # a manifest that can't be read is a problem, reported as one
    if not str(manifest.get("Description") or "").strip():
        return [f"{source.display('manifest.yaml')}: no Description: the murano client's "
                "package check (murano-pkg-check E020) refuses such a package in "
                "'murano package-import'"]
    return []


def _check_hot(package: HotPackage) -> list[str]:
    """The template (each problem at its line), then the class generated from it."""
    try:
        package.template()
    except errors.LoadErrors as exc:
        return [str(p) for p in exc.problems]
    except LoadError as exc:
        return [str(exc)]
    return _check_class(package, package.name, package.source.display(TEMPLATE))


def _check_class(package: Package, name: str, where: str) -> list[str]:
    problems = []
    try:
        cls = package.load_class(name)
    except errors.LoadErrors as exc:
        return [_located(problem, where) for problem in exc.problems]
    except (LoadError, errors.DslError) as exc:
        return [_located(exc, where)]
    runtime = package.loader.interpreter.runtime
    for decl in list(cls.properties.values()) + [
            a for m in cls.methods.values() for a in m.arguments]:
        problems.extend(_check_contract(decl.contract, runtime))
        for check in (decl.compiled_contract, decl.compiled_default):
            try:
                check()
            except (LoadError, errors.DslError) as exc:
                problems.append(_located(exc, where))
    for method in cls.methods.values():
        if method.native is None:
            try:
                method.block()
            except (LoadError, errors.DslError) as exc:
                problems.append(_located(exc, where))
    for relpath in {f"Classes/{package.class_files[name]}"}:
        for doc, _ in package._parse(relpath):
            problems.extend(_check_expressions(doc, where, package.loader.interpreter.runtime))
    return problems


def _check_contract(spec: Any, runtime: Runtime) -> Iterator[str]:
    """Every call on the value in a contract (``$.int().notNull()``) is a contract function.

    The arguments of those calls (``check``'s predicate) are ordinary expressions.
    """
    for value, _ in _walk(spec, None):
        if not isinstance(value, Expression):
            continue
        node = value.node.expression if isinstance(value.node, ast.Statement) else value.node
        calls = []
        while isinstance(node, ast.BinaryOperator) and node.operator in (".", "?."):
            node, call = node.args
            if type(call) is ast.Function:
                calls.append(call.name)
        on_value = isinstance(node, ast.GetContextValue) and node.path.value == "$"
        for name in reversed(calls if on_value else []):
            if runtime.contract_function(name) is None:
                known = ", ".join(f"{n}()" for n in sorted(runtime.contract_functions))
                yield (f"{value.position}: contract {value.source!r}: {name}() is not a "
                       f"contract function ({known} are)")


def _check_expressions(doc: Any, where: str, runtime: Runtime) -> Iterator[str]:
    for value, near in _walk(doc, None):
        if isinstance(value, Expression):
            try:
                compiler.compile_expression(value.node, runtime)
            except (LoadError, errors.DslError) as exc:
                yield f"{value.position}: {exc}"
        elif isinstance(value, str) and value.lstrip().startswith("$"):
            try:
                parse(value)
            except LoadError as exc:
                # Strings carry no position: name the mapping that holds it.
                yield f"{near or where}: {exc.message}"


def _walk(value: Any, near: Any) -> Iterator[tuple[Any, Any]]:
    """Every value, with the position of the innermost mapping around it."""
    near = position_of(value) or near
    yield value, near
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(key, near)
            yield from _walk(item, near)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item, near)
    elif isinstance(value, Deferred):  # a method's body, kept apart in the cache
        yield from _walk(value.get(), near)


def _located(exc: Exception, where: str) -> str:
    if isinstance(exc, LoadError) and (exc.position is not None or exc.file):
        return str(exc)
    return f"{where}: {exc}"
