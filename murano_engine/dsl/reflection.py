"""Reflection objects returned by ``typeinfo()``: types, properties, methods, packages.

They answer ``.member`` reads through ``murano_member`` and calls through
``murano_call``, which compiled code looks for on non-object values.
"""

from __future__ import annotations

from murano_engine.dsl import meta
from murano_engine.dsl.classes import ArgumentSpec, MethodSpec, MuranoClass, PropertySpec
from murano_engine.dsl.objects import real_object

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


#: the methods reflection values answer (``$method.invoke(...)``, ``$property.getValue(..)``)
METHODS = frozenset({"invoke", "getValue", "setValue"})


class _Reflected:
    _members: tuple[str, ...] = ()

    def murano_member(self, name: str) -> Any:
        if name not in self._members:
            raise AttributeError(f"{type(self).__name__} has no member {name!r}")
        return getattr(self, name)

    def murano_call(self, name: str, args: list, kwargs: dict) -> Any:
        raise AttributeError(f"{type(self).__name__} has no method {name!r}")


class TypeInfo(_Reflected):
    _members = ("name", "usage", "version", "ancestors", "properties", "methods", "package",
                "type", "meta", "cardinality", "targets", "inherited")

    def __init__(self, cls: MuranoClass, executor: Any) -> None:
        self.cls = cls
        self.executor = executor

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeInfo) and other.cls is self.cls

    def __hash__(self) -> int:
        return hash(self.cls)

    @property
    def name(self) -> str:
        return self.cls.name

    @property
    def usage(self) -> str:
        return self.cls.usage

    @property
    def version(self) -> VersionInfo:
        return VersionInfo(self.cls.version)

    @property
    def ancestors(self) -> tuple:
        return tuple(TypeInfo(c, self.executor) for c in self.cls.init_order() if c is not self.cls)

    @property
    def properties(self) -> tuple:
        """Every property of the type, inherited ones too (the most derived declaration)."""
        return tuple(PropertyInfo(specs[0], self.executor)
                     for name, specs in self.cls.all_properties().items()
                     if not name.startswith((".", "__")))

    @property
    def methods(self) -> tuple:
        names = sorted({n for c in self.cls.ancestors() for n in c.methods
                        if not n.startswith((".", "__"))})
        found = (self.cls.find_method(n) for n in names)
        return tuple(MethodInfo(m, self.executor) for m in found if m is not None)

    @property
    def package(self) -> PackageInfo:
        return PackageInfo(self.cls.package, self.executor)

    @property
    def type(self) -> Any:
        return self.cls.ref

    @property
    def meta(self) -> tuple:
        return tuple(meta.type_meta(self.executor, self.cls))

    @property
    def cardinality(self) -> Any:
        return self.cls.meta_options.get("Cardinality")

    @property
    def targets(self) -> Any:
        return self.cls.meta_options.get("Applies")

    @property
    def inherited(self) -> Any:
        return self.cls.meta_options.get("Inherited")


class PropertyInfo(_Reflected):
    _members = ("name", "hasDefault", "usage", "declaringType", "meta")

    def __init__(self, spec: PropertySpec, executor: Any) -> None:
        self.spec = spec
        self.executor = executor
        self.name = spec.name
        self.hasDefault = spec.has_default
        self.usage = spec.usage

    @property
    def meta(self) -> tuple:
        return tuple(meta.property_meta(self.executor, self.spec.declaring_class, self.name))

    @property
    def declaringType(self) -> TypeInfo:  # noqa: N802 - MuranoPL name
        return TypeInfo(self.spec.declaring_class, self.executor)

    def murano_call(self, name: str, args: list, kwargs: dict) -> Any:
        if name == "getValue":
            target = real_object(args[0]) if args else None
            if target is None:
                return self.executor.get_static(self.spec.declaring_class, self.name, None)
            return self.executor.get_property(target, self.name, None)
        if name == "setValue":
            target = real_object(args[0])
            if target is None:
                return self.executor.set_static(self.spec.declaring_class, self.name, args[1],
                                                None)
            return self.executor.set_property(target, self.name, args[1], None)
        return super().murano_call(name, args, kwargs)


class MethodInfo(_Reflected):
    _members = ("name", "arguments", "declaringType", "meta")

    def __init__(self, method: MethodSpec, executor: Any) -> None:
        self.method = method
        self.executor = executor
        self.name = method.name

    @property
    def meta(self) -> tuple:
        return tuple(meta.method_meta(self.executor, self.method.declaring_class, self.name))

    @property
    def arguments(self) -> tuple:
        return tuple(ArgumentInfo(a, self) for a in self.method.arguments)

    @property
    def declaringType(self) -> TypeInfo:  # noqa: N802 - MuranoPL name
        return TypeInfo(self.method.declaring_class, self.executor)

    def murano_call(self, name: str, args: list, kwargs: dict) -> Any:
        if name == "invoke":
            receiver = args[0] if args else None
            if receiver is None:
                receiver = self.method.declaring_class.ref
            return self.executor.invoke(self.method, receiver, list(args[1:]), kwargs, None)
        return super().murano_call(name, args, kwargs)


class ArgumentInfo(_Reflected):
    _members = ("name", "hasDefault", "usage", "declaringMethod", "meta")

    def __init__(self, spec: ArgumentSpec, method: MethodInfo) -> None:
        self.spec = spec
        self.name = spec.name
        self.hasDefault = spec.has_default
        self.usage = spec.usage
        self.declaringMethod = method

    @property
    def meta(self) -> tuple:
        method = self.declaringMethod.method
        return tuple(meta.build(self.declaringMethod.executor, self.spec.meta,
                                method.declaring_class, "Argument"))


class PackageInfo(_Reflected):
    _members = ("name", "version", "types", "meta")

    def __init__(self, package: Any, executor: Any) -> None:
        self.package = package
        self.executor = executor
        self.name = package.name
        self.version = VersionInfo(package.version)

    @property
    def meta(self) -> tuple:
        classes = self.package.classes()
        if not classes:
            return ()
        return tuple(meta.build(self.executor, self.package.meta, classes[0], "Package"))

    @property
    def types(self) -> tuple:
        return tuple(self.package.class_files)


class VersionInfo(_Reflected):
    """A semantic version: ``major``, ``minor``, ``patch``, ``prerelease``, ``build``."""

    _members = ("major", "minor", "patch", "prerelease", "build")

    def __init__(self, version: Any) -> None:
        self.major = version.major
        self.minor = version.minor
        self.patch = version.patch
        self.prerelease = ".".join(version.prerelease) or None
        self.build = ".".join(version.build) or None
        self.text = str(version)

    def __str__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return str(other) == self.text

    def __hash__(self) -> int:
        return hash(self.text)
