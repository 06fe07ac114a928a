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

    from murano_engine.dsl.classes import MuranoClass


def validate_package(path: Path, interpreter: Interpreter,
                     search_dirs: Iterable[Path] = ()) -> list[str]:
    """Check the manifest, every class, every method body and every expression.

    The package at ``path`` is the one checked even where ``search_dirs`` hold
    another copy of it (its source folder beside its zip, say): it is added first."""
    return validate(path, interpreter, search_dirs)[0]


def validate(path: Path, interpreter: Interpreter, search_dirs: Iterable[Path] = ()
             ) -> tuple[list[str], list[str]]:
    """(problems, warnings) of the package at ``path``: the problems as
    :func:`validate_package` finds them; the warnings name the calls in method bodies
    and Defaults that cannot succeed (:func:`call_warnings`), which Murano would only
    find when they run, so a package written for it still validates."""
    loader = PackageLoader((), interpreter)
    try:
        package = loader.add(path)
        for directory in search_dirs:
            loader.scan(directory)
    except errors.LoadErrors as exc:
        return [str(p) for p in exc.problems], []
    except LoadError as exc:
        return [str(exc)], []
    if isinstance(package, HotPackage):
        return _check_hot(package), []
    problems: list[str] = []
    for name, relpath in sorted(package.class_files.items()):
        where = package.source.display(f"Classes/{relpath}")
        if not package.source.exists(f"Classes/{relpath}"):
            problems.append(f"{where}: class file of {name} is missing")
            continue
        problems.extend(_check_class(package, name, where))
    return problems, call_warnings(package)


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


# -- calls that cannot succeed -----------------------------------------------------------

def call_warnings(package: Package) -> list[str]:
    """Every call in the package's method bodies and Defaults that nothing can answer,
    at its file and line: a function (``formt(...)``) that neither Murano's functions,
    the engine's nor yaql's library (of the package's format) has; a method
    (``$.deplyo()``) that no class the loader knows declares and no function answers
    either; a method of a class named in the call (``:Util.mak()``) that the class
    lacks. Each says which known names come closest."""
    known = _KnownNames(package.loader)
    found: list[str] = []
    for name in sorted(package.class_files):
        try:
            cls = package.load_class(name)
        except (LoadError, errors.DslError, errors.LoadErrors):
            continue  # a problem, reported as one
        for text in _class_call_warnings(cls, known):
            if text not in found:
                found.append(text)
    return found


class _KnownNames:
    """What calls can reach: Murano's functions, the engine's fast paths, yaql's library
    (per flavour), reflection's methods and every method of every class the loader knows
    (loaded on first use)."""

    def __init__(self, loader: PackageLoader) -> None:
        self.loader = loader
        self.runtime: Runtime = loader.interpreter.runtime
        self._methods: set[str] | None = None
        self._library: dict[bool, set[str]] = {}

    def methods(self) -> set[str]:
        if self._methods is None:
            names: set[str] = set()
            for versions in list(self.loader.packages.values()):
                for package in versions:
                    if isinstance(package, HotPackage):
                        continue
                    for class_name in package.class_files:
                        try:
                            names.update(package.load_class(class_name).methods)
                        except (LoadError, errors.DslError, errors.LoadErrors):
                            continue
            self._methods = names
        return self._methods

    def library(self, legacy: bool) -> set[str]:
        """The names in yaql's library of the flavour (to suggest the closest)."""
        names = self._library.get(legacy)
        if names is None:
            names = self._library[legacy] = set()
            context = self.runtime.root_context(legacy)
            while context is not None:
                names.update(n for n in getattr(context, "_functions", {})
                             if not n.startswith("#"))
                context = context.parent
        return names

    def function(self, name: str, legacy: bool) -> bool:
        from murano_engine.dsl import queries
        return (name in self.runtime.functions or name in queries.FUNCTIONS
                or name in queries.LAZY_FUNCTIONS
                or bool(self.runtime.root_context(legacy).collect_functions(
                    name, lambda fd, ctx: fd.is_function)))

    def method(self, name: str, legacy: bool) -> bool:
        from murano_engine.dsl import queries, reflection
        spec = self.runtime.functions.get(name)
        return (spec is not None and spec.method or name in queries.METHODS
                or name in reflection.METHODS or name in self.methods()
                or bool(self.runtime.root_context(legacy).collect_functions(
                    name, lambda fd, ctx: fd.is_method)))

    def closest(self, name: str, legacy: bool, methods: bool) -> str:
        """`` (did you mean a(), b()?)`` from the names a call of that kind reaches."""
        from difflib import get_close_matches

        from murano_engine.dsl import queries
        pool = set(self.runtime.functions) | self.library(legacy)
        pool |= set(queries.METHODS) | self.methods() if methods else set(queries.FUNCTIONS)
        close = get_close_matches(name, sorted(pool), n=3)
        return f" (did you mean {', '.join(f'{c}()' for c in close)}?)" if close else ""


def _class_call_warnings(cls: MuranoClass, known: _KnownNames) -> Iterator[str]:
    """The warnings of the calls written in ``cls``'s method bodies and Defaults."""
    legacy = cls.package.legacy
    declarations: list[Any] = list(cls.properties.values())
    for method in cls.methods.values():
        declarations.extend(method.arguments)
        if method.native is None:
            body = method.body.get() if isinstance(method.body, Deferred) else method.body
            yield from _data_call_warnings(body, cls, known, legacy)
    for decl in declarations:
        if decl.has_default:
            yield from _data_call_warnings(decl.default, cls, known, legacy)


def _data_call_warnings(data: Any, cls: MuranoClass, known: _KnownNames,
                        legacy: bool) -> Iterator[str]:
    for value, _ in _walk(data, None):
        if isinstance(value, Expression):
            node = value.node
            for text in _node_call_warnings(node, cls, known, legacy):
                yield f"{value.position}: {text}"


def _node_call_warnings(node: Any, cls: MuranoClass, known: _KnownNames,
                        legacy: bool) -> Iterator[str]:
    """The calls under ``node`` (a yaql syntax tree) that cannot succeed."""
    pending = [node]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.BinaryOperator) and node.operator in (".", "?.") \
                and type(node.args[1]) is ast.Function:
            receiver, call = node.args
            text = _method_call_warning(receiver, call.name, cls, known, legacy)
            if text is not None:
                yield text
            pending.append(receiver)
            pending.extend(call.args)
            continue
        if type(node) is ast.Function and not node.name.startswith("#") \
                and not known.function(node.name, legacy):
            yield (f"no function {node.name}() exists: {node.name}(...) cannot be called"
                   f"{known.closest(node.name, legacy, methods=False)}")
        pending.extend(_children(node))


def _method_call_warning(receiver: Any, name: str, cls: MuranoClass, known: _KnownNames,
                         legacy: bool) -> str | None:
    typed = _type_named(receiver, cls)
    if typed is not None:  # ``:Util.make()``, ``ns:Util.make()``: the class is known
        spec = known.runtime.functions.get(name)
        if typed.find_method(name) is not None or spec is not None and spec.method \
                or _extension(cls, name):
            return None
        methods = sorted({n for c in typed.ancestors() for n in c.methods})
        from difflib import get_close_matches
        close = get_close_matches(name, methods, n=3)
        hint = f" (did you mean {', '.join(f'{c}()' for c in close)}?)" if close else ""
        return f"{typed.name} has no method {name}(){hint}"
    if known.method(name, legacy):
        return None
    return (f"no class, extension or function has a method {name}(): .{name}(...) cannot "
            f"be called{known.closest(name, legacy, methods=True)}")


def _type_named(node: Any, cls: MuranoClass) -> MuranoClass | None:
    """The class a type reference written as ``:Name`` or ``ns:Name`` names, if it can be
    found; None for any other expression."""
    if isinstance(node, ast.UnaryOperator) and node.operator == ":" \
            and isinstance(node.args[0], ast.KeywordConstant):
        written = f"=:{node.args[0].value}"  # as the compiled code resolves it
    elif isinstance(node, ast.BinaryOperator) and node.operator == ":" and all(
            isinstance(a, ast.KeywordConstant) for a in node.args):
        written = f"{node.args[0].value}:{node.args[1].value}"
    else:
        return None
    try:
        return cls.resolve_type(written)
    except (LoadError, errors.DslError, errors.LoadErrors):
        return None


def _extension(cls: MuranoClass, name: str) -> bool:
    """Whether an extension method ``name`` reaches calls in ``cls`` (its own, imported)."""
    if cls.extension_method(name) is not None:
        return True
    try:
        return any(i.extension_method(name) is not None for i in cls.imports())
    except (LoadError, errors.DslError, errors.LoadErrors):
        return False


def _children(node: Any) -> list[Any]:
    """The sub-expressions of a yaql syntax tree node."""
    if isinstance(node, ast.Statement):
        return [node.expression]
    if isinstance(node, ast.Wrap):
        return [node.expr]
    if isinstance(node, ast.MappingRuleExpression):
        return [node.source, node.destination]
    if isinstance(node, ast.GetContextValue):
        return []
    return [a for a in getattr(node, "args", ()) if isinstance(a, ast.Expression)]

