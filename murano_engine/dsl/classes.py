"""MuranoPL types: classes, their properties, methods and arguments.

A :class:`MuranoClass` is built from one YAML document of a class file. It is
immutable once built and shared by every executor that uses its package;
per-run state (static property values, locks) lives in the executor.
"""

from __future__ import annotations

import _thread
import re
from collections.abc import Callable, Iterable

from murano_engine.dsl import errors
from murano_engine.dsl.document_cache import Deferred
from murano_engine.dsl.errors import LoadError, Position
from murano_engine.dsl.yaml_loader import position_of

#: the most ``.init`` calls making one object may take (a lattice of diamonds doubles
#: them at each level)
MAX_INIT_CALLS = 1000

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

    from murano_engine.dsl.packages import Package

PROPERTY_USAGES = frozenset({"In", "Out", "InOut", "Const", "Runtime", "Static", "Config"})
WRITABLE_USAGES = frozenset({"Out", "InOut", "Runtime", "Static", "Config"})
MODEL_USAGES = frozenset({"In", "Out", "InOut", "Const"})
METHOD_USAGES = frozenset({"Runtime", "Static", "Extension", "Action"})
ARGUMENT_USAGES = ("Standard", "VarArgs", "KwArgs")
_PREFIX = re.compile(r"^[A-Za-z_]\w*$")
_SPECIAL_METHODS = {"initialize": ".init", "destroy": ".destroy"}
#: held while a class's Python half is attached (MuranoClass.defer_native)
_ATTACHING = _thread.allocate_lock()


class NamespaceResolver:
    """Turns ``ns:Name``, ``:Name`` and ``Name`` into full class names."""

    def __init__(self, namespaces: dict[str, Any] | None, position: Position | None) -> None:
        self.namespaces: dict[str, str] = {"=": "", "": ""}
        if namespaces is not None and not isinstance(namespaces, dict):
            raise LoadError("Namespaces must be a mapping of prefixes to namespaces", position)
        for prefix, namespace in (namespaces or {}).items():
            if not isinstance(prefix, str) or (prefix != "=" and not _PREFIX.match(prefix)):
                raise LoadError(f"invalid namespace prefix {prefix!r}", position)
            if namespace is not None and not isinstance(namespace, str):
                raise LoadError(f"namespace of prefix {prefix!r} must be a name", position)
            self.namespaces[prefix] = namespace or ""
        self.position = position

    def resolve(self, name: str) -> str:
        if ":" in name:
            prefix, _, short = name.partition(":")
            prefix = prefix or "="
        elif "." in name:
            return name
        else:
            prefix, short = "=", name
        try:
            namespace = self.namespaces[prefix]
        except KeyError:
            raise errors.NoClassFound(
                f"unknown namespace prefix {prefix!r} in {name!r}") from None
        return f"{namespace}.{short}" if namespace else short


class Declaration:
    """What properties and arguments share: a contract and an optional Default."""

    __slots__ = ("name", "contract", "default", "has_default", "usage", "meta", "position",
                 "_compiled_contract", "_compiled_default")

    def __init__(self, name: str, decl: dict, usage: str, position: Position | None) -> None:
        self.name = name
        self.contract = decl["Contract"]
        self.has_default = "Default" in decl
        self.default = decl.get("Default")
        self.usage = usage
        self.meta = decl.get("Meta")
        self.position = position
        self._compiled_contract: Any = None
        self._compiled_default: Any = None

    def compiled_contract(self) -> Any:
        if self._compiled_contract is None:
            from murano_engine.dsl.contracts import Contract
            self._compiled_contract = Contract(self.contract, self.position)
        return self._compiled_contract

    def compiled_default(self) -> Any:
        """The Default as a closure over an evaluation context."""
        if self._compiled_default is None:
            from murano_engine.dsl.instructions import compile_data
            self._compiled_default = compile_data(self.default)
        return self._compiled_default


def _one_of(value: Any, allowed: Iterable[str]) -> bool:
    """Whether ``value`` is one of the ``allowed`` words (a list or a mapping never is)."""
    return isinstance(value, str) and value in allowed


def _checked_declaration(kind: str, name: str, decl: Any, usages: Any,
                         default_usage: str, position: Position | None) -> str:
    position = position_of(decl) or position
    if not isinstance(decl, dict):
        raise LoadError(f"{kind} {name!r} must be a mapping", position)
    if "Contract" not in decl:
        raise LoadError(f"{kind} {name!r} has no Contract", position)
    usage = decl.get("Usage", default_usage)
    if not _one_of(usage, usages):
        raise LoadError(f"{kind} {name!r}: unknown Usage {usage!r}", position)
    return usage


class PropertySpec(Declaration):
    """A declared property."""

    __slots__ = ("declaring_class", "path")

    def __init__(self, name: str, decl: Any, declaring_class: MuranoClass) -> None:
        usage = _checked_declaration("property", name, decl, PROPERTY_USAGES, "In",
                                     declaring_class.position)
        super().__init__(name, decl, usage, position_of(decl) or declaring_class.position)
        self.declaring_class = declaring_class
        #: how contract violations name it
        self.path = f"{declaring_class.name}.{name}"


class ArgumentSpec(Declaration):
    """A declared method argument."""

    __slots__ = ()

    def __init__(self, name: str, decl: Any, position: Position | None) -> None:
        usage = _checked_declaration("argument", name, decl, ARGUMENT_USAGES, "Standard",
                                     position)
        super().__init__(name, decl, usage, position_of(decl) or position)


class MethodSpec:
    """A declared method: MuranoPL body or a native Python function."""

    __slots__ = ("name", "declaring_class", "arguments", "usage", "scope", "meta",
                 "position", "body", "native", "_block", "synchronize", "binding")

    def __init__(self, name: str, declaring_class: MuranoClass, *, arguments: list[ArgumentSpec],
                 usage: str = "Runtime", scope: str = "Session", meta: Any = None,
                 position: Position | None = None, body: Any = None,
                 native: Callable[..., Any] | None = None) -> None:
        self.name = name
        self.declaring_class = declaring_class
        self.arguments = arguments
        self.usage = usage
        self.scope = scope
        self.meta = meta
        self.position = position
        self.body = body
        self.native = native
        self._block: Any = None
        self.synchronize: Any = None
        #: how the executor binds positional arguments (it fills this on first call)
        self.binding: Any = None

    @classmethod
    def from_yaml(cls, name: str, decl: Any, declaring_class: MuranoClass) -> MethodSpec:
        position = position_of(decl) or declaring_class.position
        if decl is None:
            decl = {}
        if not isinstance(decl, dict):
            raise LoadError(f"method {name!r} must be a mapping", position)
        usage = decl.get("Usage", "Runtime")
        if not _one_of(usage, METHOD_USAGES):
            raise LoadError(f"method {name!r}: unknown Usage {usage!r}", position)
        scope = decl.get("Scope", "Session")
        if not _one_of(scope, ("Session", "Public")):
            raise LoadError(f"method {name!r}: unknown Scope {scope!r}", position)
        if usage == "Action" and "Scope" in decl and scope == "Session":
            raise LoadError(f"method {name!r}: Usage Action cannot have Scope Session",
                            position)
        arguments = _parse_arguments(name, decl.get("Arguments"), position)
        if usage == "Extension" and not arguments:
            raise LoadError(f"extension method {name!r} needs at least one argument", position)
        return cls(name, declaring_class, arguments=arguments, usage=usage, scope=scope,
                   meta=decl.get("Meta"), position=position, body=decl.get("Body"))

    @property
    def is_static(self) -> bool:
        return self.usage in ("Static", "Extension")

    @property
    def is_public(self) -> bool:
        return self.scope == "Public" or self.usage == "Action"

    def block(self) -> Any:
        """The compiled body (compiled on first call)."""
        if self._block is None:
            from murano_engine.dsl.instructions import compile_body
            body = self.body
            if isinstance(body, Deferred):  # a class file's, read back from the cache
                body = self.body = body.get()
            self._block = compile_body(body, self.position)
        return self._block

    def __repr__(self) -> str:
        return f"<method {self.declaring_class.name}.{self.name}>"


def _parse_arguments(method: str, decl: Any, position: Position | None) -> list[ArgumentSpec]:
    if decl is None:
        return []
    items: list[tuple[str, Any]]
    if isinstance(decl, dict):
        items = list(decl.items())
    elif isinstance(decl, list):
        items = []
        for entry in decl:
            if not isinstance(entry, dict) or len(entry) != 1:
                raise LoadError(f"method {method!r}: each argument must be a one-key mapping",
                                position_of(entry) or position)
            items.extend(entry.items())
    else:
        raise LoadError(f"method {method!r}: Arguments must be a list or a mapping", position)
    arguments = [ArgumentSpec(str(name), value, position) for name, value in items]
    order = [ARGUMENT_USAGES.index(a.usage) for a in arguments]
    if order != sorted(order) or order.count(1) > 1 or order.count(2) > 1:
        raise LoadError(f"method {method!r}: Standard arguments must come first, then at "
                        f"most one VarArgs, then at most one KwArgs", position)
    return arguments


class MuranoClass:
    """A MuranoPL type."""

    def __init__(self, name: str, package: Package, namespaces: NamespaceResolver,
                 position: Position | None, usage: str = "Class") -> None:
        self.name = name
        self.package = package
        self.namespaces = namespaces
        self.position = position
        self.usage = usage
        self.parents: list[MuranoClass] = []
        self.properties: dict[str, PropertySpec] = {}
        self.methods: dict[str, MethodSpec] = {}
        self.meta: Any = None
        self.import_names: list[Any] = []
        self.meta_options: dict[str, Any] = {}
        self.native: type | None = None
        self._method_cache: dict[str, MethodSpec | None] = {}
        self._type_cache: dict[str, MuranoClass] = {}
        self._ancestors: frozenset[MuranoClass] | None = None
        self._init_order: list[MuranoClass] | None = None
        self._init_calls: list[MuranoClass] | None = None
        self._all_properties: dict[str, list[PropertySpec]] | None = None
        self._initialized: tuple | None = None
        self._imports: list[MuranoClass] | None = None
        from murano_engine.dsl.objects import TypeRef
        self.ref = TypeRef(self)

    # -- the Python half ----------------------------------------------------------
    def defer_native(self, attach: Callable[[MuranoClass, dict[str, MethodSpec]], type | None]
                     ) -> None:
        """Have ``attach(self, methods)`` add this class's Python half when ``methods``
        or ``native`` is first read: it adds the native methods to ``methods`` (a copy
        of the declared ones) and returns ``native``. The half's module is imported
        then, so a class whose methods are never called and whose objects are never
        made (a package checked, core library classes a run does not use) imports
        nothing."""
        self._declared = (self.__dict__.pop("methods"), attach)
        del self.native

    def __getattr__(self, name: str) -> Any:
        # ``methods`` and ``native`` are missing only while defer_native's attach waits
        if name in ("methods", "native") and "_declared" in self.__dict__:
            with _ATTACHING:
                declared = self.__dict__.get("_declared")
                if declared is not None:  # (not attached by another thread meanwhile)
                    methods, attach = declared
                    methods = dict(methods)
                    self.native = attach(self, methods)
                    self.methods = methods
                    del self._declared
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- identity ----------------------------------------------------------------
    @property
    def version(self) -> Any:
        return self.package.version

    def __repr__(self) -> str:
        return f"<class {self.name}/{self.package.version}@{self.package.name}>"

    # -- hierarchy ---------------------------------------------------------------
    def ancestors(self) -> frozenset[MuranoClass]:
        """This class and every class it inherits from."""
        if self._ancestors is None:
            found = {self}
            for parent in self.parents:
                found |= parent.ancestors()
            self._ancestors = frozenset(found)
        return self._ancestors

    def is_compatible(self, other: MuranoClass) -> bool:
        """Whether this class is ``other`` or inherits from it."""
        return other in self.ancestors() or any(
            a.name == other.name for a in self.ancestors())

    def init_order(self) -> list[MuranoClass]:
        """Every class of the hierarchy, ancestors before descendants, each once."""
        if self._init_order is None:
            order: list[MuranoClass] = []
            seen: set[MuranoClass] = set()

            def visit(cls: MuranoClass) -> None:
                if cls in seen:
                    return
                seen.add(cls)
                for parent in cls.parents:
                    visit(parent)
                order.append(cls)

            visit(self)
            self._init_order = order
        return self._init_order

    def init_calls(self) -> list[MuranoClass]:
        """The classes whose ``.init`` runs when an object of this class is made, in
        Murano's order: each parent's calls (its ancestors' first), then this class's.
        As in Murano, a class reached along two paths (a diamond) runs on each of them;
        a hierarchy that would run more than MAX_INIT_CALLS is refused."""
        if self._init_calls is None:
            counts: dict[MuranoClass, int] = {}

            def count(cls: MuranoClass) -> int:
                found = counts.get(cls)
                if found is None:
                    found = counts[cls] = min(MAX_INIT_CALLS + 1, sum(
                        count(p) for p in cls.parents) + (".init" in cls.methods))
                return found

            if count(self) > MAX_INIT_CALLS:
                raise errors.DslInvalidOperationError(
                    f"the class hierarchy of {self.name} runs .init more than "
                    f"{MAX_INIT_CALLS} times (its ancestors along every path)")
            calls: list[MuranoClass] = []

            def visit(cls: MuranoClass) -> None:
                for parent in cls.parents:
                    if counts[parent]:
                        visit(parent)
                if ".init" in cls.methods:
                    calls.append(cls)

            visit(self)
            self._init_calls = calls
        return self._init_calls

    def all_properties(self) -> dict[str, list[PropertySpec]]:
        """Property name -> its declarations, most derived first."""
        if self._all_properties is None:
            result: dict[str, list[PropertySpec]] = {}
            for cls in reversed(self.init_order()):
                for name, spec in cls.properties.items():
                    result.setdefault(name, []).append(spec)
            self._all_properties = result
        return self._all_properties

    def initialized_properties(self) -> tuple[tuple[str, list[PropertySpec],
                                                     PropertySpec | None], ...]:
        """(name, declarations, the one whose Default applies) of every property an
        object's initialization sets: all but Static ones and Runtime ones without a
        Default."""
        if self._initialized is None:
            entries = []
            for name, specs in self.all_properties().items():
                if len(specs) > 1:
                    self._check_unambiguous(name)
                usage = specs[0].usage
                default = next((s for s in specs if s.has_default), None)
                if usage == "Static" or usage == "Runtime" and default is None:
                    continue
                entries.append((name, specs, default))
            self._initialized = tuple(entries)
        return self._initialized

    def _check_unambiguous(self, name: str) -> None:
        """Refuse a property declared by two classes of the hierarchy (the nearest along
        their paths) neither of which derives the other, as Murano does (its lookup is
        the methods' one)."""
        declaring, chosen = self._nearest(name, lambda cls: cls.properties)
        if chosen is None:
            names = ", ".join(sorted(c.name for c in declaring))
            raise errors.AmbiguousPropertyNameError(
                f"property {name!r} of {self.name} is declared by unrelated classes: {names}")

    def _nearest(self, name: str, declared: Callable[[MuranoClass], Any]
                 ) -> tuple[set[MuranoClass], MuranoClass | None]:
        """The classes nearest this one along each inheritance path whose ``declared``
        members hold ``name``, and the one of them that derives from all the others
        (None when none does, or none declares it): Murano's resolution of a member."""
        declaring: set[MuranoClass] = set()
        seen: set[MuranoClass] = set()

        def visit(cls: MuranoClass) -> None:
            if cls in seen:
                return
            seen.add(cls)
            if name in declared(cls):
                declaring.add(cls)
            else:
                for parent in cls.parents:
                    visit(parent)

        visit(self)
        winners = [c for c in declaring
                   if all(o is c or o in c.ancestors() for o in declaring)]
        return declaring, winners[0] if len(winners) == 1 else None

    def find_property(self, name: str) -> PropertySpec | None:
        specs = self.all_properties().get(name)
        return specs[0] if specs else None

    # -- methods -----------------------------------------------------------------
    def find_method(self, name: str) -> MethodSpec | None:
        """Murano's resolution: the override that beats every other candidate."""
        try:
            return self._method_cache[name]
        except KeyError:
            pass
        declaring, chosen = self._nearest(name, lambda cls: cls.methods)
        if declaring and chosen is None:
            names = ", ".join(sorted(c.name for c in declaring))
            raise errors.AmbiguousMethodName(
                f"method {name!r} of {self.name} is declared by unrelated classes: {names}")
        method = chosen.methods[name] if chosen is not None else None
        self._method_cache[name] = method
        return method

    def public_methods(self) -> dict[str, MethodSpec]:
        """Every method callable as an action, inherited ones included."""
        names = {n for cls in self.ancestors() for n in cls.methods}
        out: dict[str, MethodSpec] = {}
        for name in sorted(names):
            method = self.find_method(name)
            if method is not None and method.is_public and not name.startswith("."):
                out[name] = method
        return out

    def extension_method(self, name: str) -> MethodSpec | None:
        method = self.methods.get(name)
        if method is not None and method.usage == "Extension":
            return method
        return None

    def imports(self) -> list[MuranoClass]:
        if self._imports is None:
            resolved = []
            for item in self.import_names:
                resolved.append(item if isinstance(item, MuranoClass)
                                else self.resolve_type(str(item)))
            self._imports = resolved
        return self._imports

    # -- names -------------------------------------------------------------------
    def resolve_type(self, name: str) -> MuranoClass:
        """Find a class by a name written in this class (namespaces applied)."""
        try:
            return self._type_cache[name]
        except KeyError:
            pass
        cls = self.package.find_class(self.namespaces.resolve(name))
        self._type_cache[name] = cls
        return cls

    def resolve_name(self, name: str) -> str:
        return self.namespaces.resolve(name)


def _check_member_name(class_name: str, kind: str, name: str, position: Position | None,
                       section: str) -> None:
    """Refuse a name with a control or format character (a right-to-left override
    shows an error message's text reversed)."""
    if not name.isprintable():
        raise LoadError(f"class {class_name}: {kind} name {name!r} holds a control or "
                        f"format character", position, field=(section, name))


def build_class(name: str, doc: dict, package: Package, namespaces: NamespaceResolver,
                resolve_parent: Callable[[str, Position | None], MuranoClass]) -> MuranoClass:
    """Build a class from its YAML document (parents resolved by the caller)."""
    position = position_of(doc)
    if not name.isprintable():
        raise LoadError(f"class name {name!r} holds a control or format character",
                        position, field=("Name",))
    usage = doc.get("Usage", "Class")
    if not _one_of(usage, ("Class", "Meta")):
        raise LoadError(f"class {name}: unknown Usage {usage!r}", position, field=("Usage",))
    for key in ("Properties", "Methods", "Workflow"):
        if doc.get(key) is not None and not isinstance(doc[key], dict):
            raise LoadError(f"class {name}: {key} must be a mapping", position, field=(key,))
    cls = MuranoClass(name, package, namespaces, position, usage)
    extends = doc.get("Extends")
    parent_names: list[Any]
    if extends is None:
        parent_names = [] if name == "io.murano.Object" else ["io.murano.Object"]
    elif isinstance(extends, list):
        parent_names = extends
    else:
        parent_names = [extends]
    for index, parent_name in enumerate(parent_names):
        where = position_of(parent_name) or position
        field = ("Extends", index) if isinstance(extends, list) else ("Extends",)
        try:
            full_name = namespaces.resolve(str(parent_name))
            parent = resolve_parent(full_name, where)
        except errors.NoClassFound as exc:
            raise LoadError(exc.message, where, field=field) from None
        except LoadError as exc:
            if exc.position is not where or exc.field:
                raise
            raise LoadError(exc.message, where, field=field) from None
        if parent.usage == "Meta" and usage == "Class":
            raise errors.InvalidInheritanceError(
                f"class {name} cannot extend meta class {parent.name}")
        cls.parents.append(parent)
    problems: list[LoadError] = []  # every declaration's, not only the first's
    for prop_name, decl in (doc.get("Properties") or {}).items():
        try:
            _check_member_name(name, "property", str(prop_name), position, "Properties")
            cls.properties[str(prop_name)] = PropertySpec(str(prop_name), decl, cls)
        except LoadError as exc:
            problems.append(exc)
    methods = doc.get("Methods")
    if methods is None:
        methods = doc.get("Workflow")
    for method_name, decl in (methods or {}).items():
        method_name = _SPECIAL_METHODS.get(str(method_name), str(method_name))
        try:
            _check_member_name(name, "method", method_name, position,
                               "Methods" if "Methods" in doc else "Workflow")
            cls.methods[method_name] = MethodSpec.from_yaml(method_name, decl, cls)
        except LoadError as exc:
            problems.append(exc)
    if problems:
        raise problems[0] if len(problems) == 1 else errors.LoadErrors(problems)
    cls.meta = doc.get("Meta")
    imports = doc.get("Import")
    if imports is not None:
        cls.import_names = imports if isinstance(imports, list) else [imports]
    if usage == "Meta":
        cls.meta_options = {
            "Cardinality": doc.get("Cardinality", "One"),
            "Applies": doc.get("Applies", "All"),
            "Inherited": doc.get("Inherited", False),
        }
        if not isinstance(cls.meta_options["Inherited"], bool):
            raise LoadError(f"meta class {name}: Inherited must be true or false", position,
                            field=("Inherited",))
    return cls
