"""Stand-ins for the modules Murano's DSL unit tests import, backed by our engine.

The tests (``murano/tests/unit/dsl/test_*.py`` in openstack/murano) drive
MuranoPL through a small Python harness: a test case that registers yaql
functions (``trace``), a runner that loads an object model and calls methods
by name, an object-model builder, and a few names from ``murano.dsl``. This
module writes that harness anew on top of ``murano_engine`` and installs it
under Murano's module names (plus the few ``testtools`` matchers and
``castellan`` names the test files import), so the test files run unchanged.
"""

from __future__ import annotations

import re
import sys
import types
import unittest
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaql.language.exceptions as yaql_exceptions

from murano_engine.dsl import collector, errors, model, serializer
from murano_engine.dsl.errors import MuranoPlException
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.dsl.runtime import FunctionSpec
from murano_engine.engine.interpreter import build_interpreter

from .handles import ObjectHandle, TypeHandle, to_engine, to_plain

#: the folder holding the ``tests`` package the adapter built from Murano's meta/
PACKAGE_DIRS: list[Path] = []
TEST_PACKAGE = "tests"


# -- testtools: the base test case and the matchers the test files use ----------------

class Mismatch(str):
    """What a matcher found wrong."""


class _Matcher:
    def __init__(self, expected: Any = None, check: Callable[[Any], bool] | None = None,
                 text: str = "") -> None:
        self.expected = expected
        self.check = check
        self.text = text

    def match(self, value: Any) -> Mismatch | None:
        if self.check is not None and self.check(value):
            return None
        return Mismatch(f"{value!r} {self.text} {self.expected!r}")


def _equals(expected: Any) -> _Matcher:
    return _Matcher(expected, lambda v: v == expected, "!=")


def _not_equals(expected: Any) -> _Matcher:
    return _Matcher(expected, lambda v: v != expected, "==")


def _is(expected: Any) -> _Matcher:
    return _Matcher(expected, lambda v: v is expected, "is not")


def _not(matcher: _Matcher) -> _Matcher:
    return _Matcher(matcher.expected, lambda v: matcher.match(v) is not None,
                    f"matches (expected not) {matcher.text}")


def _contains(expected: Any) -> _Matcher:
    return _Matcher(expected, lambda v: expected in v, "does not contain")


def _starts_with(expected: str) -> _Matcher:
    return _Matcher(expected, lambda v: str(v).startswith(expected), "does not start with")


def _matches_regex(pattern: str, flags: int = 0) -> _Matcher:
    return _Matcher(pattern, lambda v: re.match(pattern, v, flags) is not None,
                    "does not match")


def _has_length(length: int) -> _Matcher:
    return _Matcher(length, lambda v: len(v) == length, "has not the length")


def _greater_than(bound: Any) -> _Matcher:
    return _Matcher(bound, lambda v: v > bound, "is not greater than")


def _matches_setwise(*matchers: _Matcher) -> _Matcher:
    def check(values: Any) -> bool:
        pending = list(values)
        if len(pending) != len(matchers):
            return False
        for matcher in matchers:
            hit = next((i for i, v in enumerate(pending) if matcher.match(v) is None), None)
            if hit is None:
                return False
            pending.pop(hit)
        return True
    return _Matcher([m.expected for m in matchers], check, "does not match setwise")


class TestCase(unittest.TestCase):
    """``testtools.TestCase``'s extras: ``assertRaises`` returns the error, ``assertThat``."""

    def assertRaises(self, expected: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N802
        if not args:
            return super().assertRaises(expected, **kwargs)
        func, *rest = args
        try:
            func(*rest, **kwargs)
        except expected as exc:
            return exc
        self.fail(f"{func} did not raise {expected}")

    def assertThat(self, value: Any, matcher: _Matcher) -> None:  # noqa: N802
        mismatch = matcher.match(value)
        if mismatch is not None:
            self.fail(mismatch)


# -- the object model builder (foundation/object_model.py's interface) -----------------

class Object:
    """An object dict of a model: ``Object(type, id=None, class_version=None, **props)``."""

    def __init__(self, *args: Any, class_version: str | None = None, **props: Any) -> None:
        type_name = args[0]
        object_id = args[1] if len(args) > 1 else None
        header = {"type": type_name, "id": object_id or uuid.uuid4().hex}
        if class_version is not None:
            header["classVersion"] = class_version
        self.data: dict[str, Any] = {"?": header, **props}

    @property
    def id(self) -> str:
        return self.data["?"]["id"]

    @property
    def type_name(self) -> str:
        return self.data["?"]["type"]

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.data[key] = value

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def __delitem__(self, key: str) -> None:
        del self.data[key]


class Ref:
    """A reference to an object of the model by its id."""

    def __init__(self, target: Any) -> None:
        self.id = target if isinstance(target, str) else target.id


class Attribute:
    """An entry of the model's ``Attributes`` section."""

    def __init__(self, obj: Object, key: str, value: Any) -> None:
        self.obj, self.key, self.value = obj, key, value


def build_model(value: Any) -> Any:
    """Plain model data from ``Object``/``Ref``/``Attribute`` helpers."""
    if isinstance(value, Object):
        return build_model(value.data)
    if isinstance(value, Ref):
        return value.id
    if isinstance(value, Attribute):
        return [value.obj.id, value.obj.type_name, value.key, value.value]
    if isinstance(value, dict):
        return {k: build_model(v) for k, v in value.items()}
    if isinstance(value, list):
        return [build_model(v) for v in value]
    return value


# -- the package loader, test case and runner -----------------------------------------

class _Registrar:
    """What ``load_package``/``load_class_package`` return: Python classes cannot be
    attached to our classes from here, so ``register_class`` does nothing."""

    def register_class(self, *args: Any, **kwargs: Any) -> None:
        return None


class TestPackageLoader:
    """The test's package loader: class configs, and engine loaders made on demand."""

    def __init__(self) -> None:
        self.configs: dict[str, dict[str, Any]] = {}

    def set_config_value(self, class_name: Any, name: str, value: Any) -> None:
        if isinstance(class_name, Object):
            class_name = class_name.type_name
        self.configs.setdefault(class_name, {})[name] = value

    def load_package(self, name: str, spec: Any) -> _Registrar:
        return _Registrar()

    load_class_package = load_package

    def class_config(self, cls: Any) -> Mapping[str, Any]:
        return self.configs.get(cls.name, {})

    def engine_loader(self, functions: Mapping[str, Callable[..., Any]]) -> PackageLoader:
        """A loader of the ``tests`` package whose interpreter has ``functions``."""
        table = {name: FunctionSpec(_python_function(func)) for name, func in functions.items()}
        loader = PackageLoader(PACKAGE_DIRS, build_interpreter(functions=table))
        package = loader.find_package(TEST_PACKAGE)
        load_class = package.load_class

        def load_with_public_tests(name: str) -> Any:
            # Murano's test loader gives every test* method Scope: Public.
            cls = load_class(name)
            for method_name, method in cls.methods.items():
                if method_name.startswith("test"):
                    method.scope = "Public"
            return cls

        package.load_class = load_with_public_tests  # type: ignore[method-assign]
        return loader


def _python_function(func: Callable[..., Any]) -> Callable[..., Any]:
    def call(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        return func(*[to_plain(a) for a in args], **{k: to_plain(v) for k, v in kwargs.items()})
    return call


class Runner:
    """Loads a model into a fresh executor and calls methods on its objects."""

    class DslObjectWrapper:
        def __init__(self, receiver: Any, runner: Runner) -> None:
            self._receiver = receiver
            self._runner = runner

        def __getattr__(self, name: str) -> Any:
            if not name.startswith("test"):
                raise AttributeError(name)
            return lambda *args, **kwargs: self._runner._execute(
                name, self._receiver, *args, **kwargs)

    def __init__(self, model_: Any, package_loader: TestPackageLoader,
                 functions: Mapping[str, Callable[..., Any]]) -> None:
        if isinstance(model_, str):
            model_ = Object(model_)
        data = build_model(model_)
        if "Objects" not in data:
            data = {"Objects": data}
        loader = package_loader.engine_loader(functions)
        self.executor = Executor(loader, services={"class_configs": package_loader.class_config})
        self._root = model.load_model(self.executor, data)
        if "ObjectsCopy" in data:
            collector.collect(self.executor)
        self.preserve_exception = False

    def _execute(self, name: str, receiver: Any, *args: Any, **kwargs: Any) -> Any:
        args_ = [to_engine(build_model(a)) for a in args]
        kwargs_ = {k: to_engine(build_model(v)) for k, v in kwargs.items()}
        try:
            return to_plain(self.executor.call(receiver, name, args_, kwargs_))
        except Exception as exc:  # noqa: BLE001 - translated as Murano's runner does
            raise self._translated(exc) from None

    def _translated(self, exc: Exception) -> BaseException:
        if self.preserve_exception:
            return exc if isinstance(exc, MuranoPlException) else MuranoPlException.wrap(
                exc, errors.stack_of(exc))
        if isinstance(exc, MuranoPlException) and exc.native is not None:
            exc = exc.native  # type: ignore[assignment]
        name = getattr(type(exc), "murano_name", "")
        prefix = "yaql.language.exceptions."
        if name.startswith(prefix):
            yaql_class = getattr(yaql_exceptions, name[len(prefix):], None)
            if yaql_class is not None and not isinstance(exc, yaql_class):
                translated = yaql_class.__new__(yaql_class)
                Exception.__init__(translated, str(exc))
                return translated
        return exc

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("test"):
            raise AttributeError(name)
        return getattr(Runner.DslObjectWrapper(self._root, self), name)

    def on(self, target: Any) -> DslObjectWrapper:
        if isinstance(target, (Object, Ref)):
            target = target.id
        if isinstance(target, str):
            target = self.executor.objects[target]
        if isinstance(target, ObjectHandle):
            target = target.obj
        return Runner.DslObjectWrapper(target, self)

    def on_class(self, class_name: str) -> DslObjectWrapper:
        cls = self.executor.loader.find_package(TEST_PACKAGE).find_class(class_name)
        return Runner.DslObjectWrapper(cls.ref, self)

    @property
    def root(self) -> ObjectHandle | None:
        return ObjectHandle(self._root) if self._root is not None else None

    @property
    def serialized_model(self) -> dict[str, Any]:
        return serializer.serialize_model(self._root)


class DslTestCase(TestCase):
    """Murano's ``DslTestCase``: a ``trace`` function, runners, the package loader."""

    def setUp(self) -> None:
        super().setUp()
        self._package_loader = TestPackageLoader()
        self._functions: dict[str, Callable[..., Any]] = {}
        self._traces: list[Any] = []
        self.register_function(lambda data: self._traces.append(data), "trace")

    def new_runner(self, model_: Any) -> Runner:
        return Runner(model_, self._package_loader, self._functions)

    @property
    def traces(self) -> list[Any]:
        return self._traces

    @traces.deleter
    def traces(self) -> None:
        self._traces = []

    @property
    def package_loader(self) -> TestPackageLoader:
        return self._package_loader

    def register_function(self, func: Callable[..., Any], name: str) -> None:
        self._functions[name] = func

    @staticmethod
    def find_attribute(model_: Mapping, obj_id: str, obj_type: str, name: str) -> Any:
        for entry in model_["Attributes"]:
            if tuple(entry[:3]) == (obj_id, obj_type, name):
                return entry[3]
        return None


# -- murano.dsl names --------------------------------------------------------------------

_MURANO_ERRORS = (
    "DslInvalidOperationError", "NoMethodFound", "NoPropertyFound", "NoClassFound",
    "NoPackageFound", "NoObjectFoundError", "MethodNotExposed", "AmbiguousMethodName",
    "DslContractSyntaxError", "ContractViolationException", "DslSyntaxError",
    "PropertyAccessError", "NoWriteAccessError", "PropertyReadError", "PropertyWriteError",
    "UninitializedPropertyAccessError", "CircularExpressionDependenciesError",
    "InvalidLhsTargetError", "InvalidInheritanceError", "ObjectDestroyedError",
)


def _serialize(value: Any, executor: Any = None, serialization_type: str = "Serializable",
               allow_refs: bool = True) -> Any:
    return serializer.dump(to_engine(value), serialization_type, allow_refs)


def _serialize_model(root: Any, executor: Any = None) -> Any:
    return serializer.serialize_model(to_engine(root))


def _named(name: str) -> Callable[[type], type]:
    return lambda cls: cls


def _module(module_name: str, /, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(module_name)
    module.__path__ = []  # every stand-in may have submodules
    module.__dict__.update(attrs)
    sys.modules[module_name] = module
    parent, _, child = module_name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


def install() -> None:
    """Put the stand-ins under Murano's (and testtools', castellan's) module names."""
    for name in ("murano", "murano.dsl", "murano.dsl.principal_objects", "murano.engine",
                 "murano.engine.system", "murano.common", "murano.tests", "murano.tests.unit",
                 "murano.tests.unit.dsl", "murano.tests.unit.dsl.foundation",
                 "castellan", "castellan.common"):
        _module(name)
    missing = {n: type(n, (Exception,), {}) for n in _MURANO_ERRORS if not hasattr(errors, n)}
    _module("murano.dsl.exceptions",
            **{n: getattr(errors, n, None) or missing[n] for n in _MURANO_ERRORS})
    _module("murano.dsl.dsl_exception", MuranoPlException=MuranoPlException)
    _module("murano.dsl.dsl", MuranoObjectInterface=ObjectHandle, name=_named,
            to_mutable=lambda value, engine=None: to_plain(value))
    _module("murano.dsl.dsl_types", MuranoType=TypeHandle, MuranoTypeReference=TypeHandle,
            MuranoObject=ObjectHandle, MuranoObjectInterface=ObjectHandle)
    _module("murano.dsl.serializer", serialize=_serialize, serialize_model=_serialize_model)
    _module("murano.dsl.helpers")
    _module("murano.dsl.principal_objects.garbage_collector", GarbageCollector=object)
    _module("murano.engine.system.logger", Logger=object)
    _module("murano.tests.unit.base", MuranoTestCase=TestCase)
    _module("murano.tests.unit.dsl.foundation.object_model", Object=Object, Ref=Ref,
            Attribute=Attribute, build_model=build_model)
    _module("murano.tests.unit.dsl.foundation.runner", Runner=Runner)
    _module("murano.tests.unit.dsl.foundation.test_case", DslTestCase=DslTestCase)
    _module("castellan.common.exception",
            AuthTypeInvalidError=type("AuthTypeInvalidError", (Exception,), {}))
    _module("testtools", TestCase=TestCase)
    _module("testtools.matchers", Equals=_equals, NotEquals=_not_equals, Is=_is, Not=_not,
            Contains=_contains, StartsWith=_starts_with, MatchesRegex=_matches_regex,
            HasLength=_has_length, GreaterThan=_greater_than,
            MatchesSetwise=_matches_setwise)
