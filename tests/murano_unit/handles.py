"""Python-side views of engine values, shaped like the ones Murano's tests inspect.

Murano's DSL tests look at method results through Murano's Python API: an
object has ``id``/``object_id``, ``type.name`` and ``get_property()``; a type
has ``name``; results are plain lists and dicts. These wrappers give our
engine's values that shape, and :func:`to_plain`/:func:`to_engine` convert
between the two worlds at the adapter's boundary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from murano_engine.dsl.objects import MuranoObject, TypeRef, real_object


class TypeHandle:
    """A class as Murano's tests see it (``MuranoType``/``MuranoTypeReference``)."""

    def __init__(self, ref: TypeRef) -> None:
        self.ref = ref

    @property
    def name(self) -> str:
        return self.ref.murano_class.name

    @property
    def type(self) -> TypeHandle:
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeHandle) and other.ref.murano_class is self.ref.murano_class

    def __hash__(self) -> int:
        return hash(self.ref.murano_class)

    def __repr__(self) -> str:
        return f"TypeHandle({self.name})"


class ObjectHandle:
    """An object as Murano's tests see it (``MuranoObject``/``MuranoObjectInterface``)."""

    def __init__(self, obj: MuranoObject) -> None:
        self.obj = obj

    @property
    def id(self) -> str:
        return self.obj.id

    object_id = id

    @property
    def type(self) -> TypeHandle:
        return TypeHandle(self.obj.murano_class.ref)

    @property
    def owner(self) -> ObjectHandle | None:
        return ObjectHandle(self.obj.owner) if self.obj.owner is not None else None

    @property
    def extension(self) -> Any:
        return self.obj.native

    def get_property(self, name: str) -> Any:
        return to_plain(self.obj.executor.get_property(self.obj, name, None))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObjectHandle) and other.obj is self.obj

    def __hash__(self) -> int:
        return hash(id(self.obj))

    def __repr__(self) -> str:
        return f"ObjectHandle({self.obj!r})"


def to_plain(value: Any) -> Any:
    """An engine value as Murano's tests expect results: lists, dicts and handles."""
    obj = real_object(value)
    if obj is not None:
        return ObjectHandle(obj)
    if isinstance(value, TypeRef):
        return TypeHandle(value)
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        return value
    if isinstance(value, Mapping):
        return {to_plain(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, Iterable):
        return [to_plain(v) for v in value]
    return value


def to_engine(value: Any) -> Any:
    """A test's argument as engine data (handles back to the objects they wrap)."""
    if isinstance(value, ObjectHandle):
        return value.obj
    if isinstance(value, TypeHandle):
        return value.ref
    if isinstance(value, Mapping):
        return {to_engine(k): to_engine(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_engine(v) for v in value]
    return value

