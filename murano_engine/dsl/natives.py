"""Classes whose methods are written in Python (the core library's system classes).

A Python class marked with :func:`native_class` and added to a
:class:`NativeRegistry` adds its methods to the MuranoPL class of the same
name, in every class a loader with that registry builds. Methods marked
:func:`method` or :func:`static` receive a :class:`NativeCall` and then the
call's arguments. A native class that defines ``__init__(self, call,
**kwargs)`` is instantiated for each object; its keyword arguments come from
``new()``.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable

from murano_engine.dsl.classes import MethodSpec, MuranoClass
from murano_engine.dsl.objects import MuranoObject, real_object

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

    from murano_engine.dsl.executor import Executor, Frame


class NativeCall:
    """What a native method gets besides its arguments."""

    __slots__ = ("executor", "frame", "receiver")

    def __init__(self, executor: Executor, frame: Frame, receiver: Any) -> None:
        self.executor = executor
        self.frame = frame
        self.receiver = receiver

    @property
    def this(self) -> MuranoObject | None:
        return real_object(self.receiver)

    @property
    def native(self) -> Any:
        obj = self.this
        return obj.native if obj is not None else None

    @property
    def caller(self) -> Frame | None:
        """The frame of the MuranoPL code that made the call."""
        return self.frame.caller

    def caller_class(self) -> MuranoClass | None:
        caller = self.frame.caller
        return caller.murano_class if caller is not None else None


def native_class(name: str) -> Callable[[type], type]:
    """Mark a Python class as the native half of the MuranoPL class ``name``."""
    def mark(py_class: type) -> type:
        py_class.murano_name = name  # type: ignore[attr-defined]
        return py_class
    return mark


def method(func: Callable[..., Any]) -> Callable[..., Any]:
    func.murano_usage = "Runtime"  # type: ignore[attr-defined]
    return staticmethod(func)  # type: ignore[return-value]


def static(func: Callable[..., Any]) -> Callable[..., Any]:
    func.murano_usage = "Static"  # type: ignore[attr-defined]
    return staticmethod(func)  # type: ignore[return-value]


class NativeRegistry:
    """The native classes of one interpreter, by MuranoPL class name.

    A class added by where it is (:meth:`add_lazy`) is imported when a MuranoPL
    class of its name is first used (its methods read, an object made), so start-up
    imports only what runs.
    """

    def __init__(self, py_classes: Iterable[type] = ()) -> None:
        self._classes: dict[str, type] = {}
        self._lazy: dict[str, str] = {}
        for py_class in py_classes:
            self.add(py_class)

    def add(self, py_class: type) -> None:
        """Add a class marked with :func:`native_class`."""
        name = getattr(py_class, "murano_name", None)
        if name is None:
            raise TypeError(f"{py_class.__name__} is not marked with native_class()")
        self._classes[name] = py_class
        self._lazy.pop(name, None)

    def add_lazy(self, name: str, where: str) -> None:
        """Add the native class of MuranoPL class ``name``, found at ``module:attribute``
        when first needed (it must be marked with ``native_class(name)``)."""
        if name not in self._classes:
            self._lazy[name] = where

    def has(self, name: str) -> bool:
        """Whether a native class is added for ``name`` (importing nothing)."""
        return name in self._classes or name in self._lazy

    def get(self, name: str) -> type | None:
        found = self._classes.get(name)
        if found is None and name in self._lazy:
            # Forgotten only once imported: an import that fails (and is raised) is tried
            # again by the next class of that name, never taken for "no Python half".
            module, _, attribute = self._lazy[name].partition(":")
            found = getattr(importlib.import_module(module), attribute)
            if getattr(found, "murano_name", None) != name:
                raise TypeError(f"{module}:{attribute} is not the native class of {name}")
            self._classes[name] = found
            self._lazy.pop(name, None)
        return found

    def import_all(self) -> None:
        """Import every class added by where it is, now: a long-lived process (murano-api,
        a worker) does so at its start rather than in tasks running side by side."""
        for name in list(self._lazy):
            self.get(name)


def attach_native(cls: MuranoClass, registry: NativeRegistry) -> None:
    """Give a freshly built class the Python methods ``registry`` has for its name, when
    they are first needed (:meth:`MuranoClass.defer_native`)."""
    if registry.has(cls.name):
        cls.defer_native(functools.partial(_native_half, registry))


def _native_half(registry: NativeRegistry, cls: MuranoClass,
                 methods: dict[str, MethodSpec]) -> type | None:
    """Add the native methods of ``cls`` to ``methods`` (its declared ones); its class
    for objects' Python halves, if it has one."""
    py_class = registry.get(cls.name)
    if py_class is None:
        return None
    for attr, value in py_class.__dict__.items():
        func = value.__func__ if isinstance(value, staticmethod) else None
        usage = getattr(func, "murano_usage", None)
        if func is None or usage is None:
            continue
        name = attr.rstrip("_")
        declared = methods.get(name)
        if declared is not None and declared.body:
            continue
        methods[name] = MethodSpec(
            name, cls, arguments=declared.arguments if declared else [], usage=usage,
            scope=getattr(func, "murano_scope", declared.scope if declared else "Session"),
            # a method only the Python half has is written nowhere in the class file: its
            # frame says <native>, not the file's first line
            position=declared.position if declared else None, native=func)
    return py_class if "__init__" in py_class.__dict__ else None


def construct_native(executor: Executor, obj: MuranoObject, cls: MuranoClass,
                     arguments: dict[str, Any], frame: Frame) -> None:
    """Build the Python half of an object, taking what its ``__init__`` accepts;
    ``frame`` is the object-level frame its calls back into MuranoPL run in."""
    py_class = cls.native
    assert py_class is not None
    accepts_all, parameters = _constructor_parameters(py_class)
    kwargs = {k: v for k, v in arguments.items()
              if isinstance(k, str) and (accepts_all or k in parameters)}
    obj.native = py_class(NativeCall(executor, frame, obj), **kwargs)


@functools.cache
def _constructor_parameters(py_class: type) -> tuple[bool, frozenset[str]]:
    """(takes any keyword, the keyword names) of a native class's ``__init__``."""
    import inspect  # here: a run that makes no native object need not import it
    parameters = inspect.signature(py_class.__init__).parameters
    accepts_all = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    return accepts_all, frozenset(parameters) - {"self", "call"}

