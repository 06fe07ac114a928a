"""Runtime values that are not plain data: objects, type references, casts."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

    from murano_engine.dsl.classes import MuranoClass


class MuranoObject:
    """An instance of a MuranoPL class.

    ``props`` holds one slot per declared property name of the whole
    hierarchy; ``private`` holds undeclared properties, one slot per
    (writing class, name). ``attributes`` is the per-class key/value store
    that survives deployments (``getAttr``/``setAttr``).
    """

    __slots__ = ("murano_class", "id", "owner", "name", "metadata", "props", "private",
                 "attributes", "designer", "destroyed", "initialized", "native",
                 "executor", "dependencies", "__weakref__")

    def __init__(self, murano_class: MuranoClass, object_id: str, owner: MuranoObject | None,
                 executor: Any, name: str | None = None) -> None:
        self.murano_class = murano_class
        self.id = object_id
        self.owner = owner
        self.name = name
        self.metadata: Any = None
        self.props: dict[str, Any] = {}
        self.private: dict[tuple[MuranoClass, str], Any] = {}
        self.attributes: dict[tuple[str, str], Any] = {}
        self.designer: dict[str, Any] = {}
        self.destroyed = False
        self.initialized = False
        self.native: Any = None
        self.executor = executor
        self.dependencies: list[tuple[MuranoObject, str | None]] = []

    @property
    def real(self) -> MuranoObject:
        return self

    def __repr__(self) -> str:
        return f"<{self.murano_class.name} {self.id}>"


class ObjectView:
    """An object seen as one of its ancestor classes (``cast``)."""

    __slots__ = ("real", "murano_class")

    def __init__(self, obj: MuranoObject, murano_class: MuranoClass) -> None:
        self.real = obj
        self.murano_class = murano_class

    @property
    def id(self) -> str:
        return self.real.id

    def __eq__(self, other: object) -> bool:
        return getattr(other, "real", None) is self.real

    def __hash__(self) -> int:
        return hash(self.real)

    def __repr__(self) -> str:
        return f"<{self.real!r} as {self.murano_class.name}>"


class TypeRef:
    """A reference to a class, the value of ``:Name`` and ``ns:Name``."""

    __slots__ = ("murano_class",)

    def __init__(self, murano_class: MuranoClass) -> None:
        self.murano_class = murano_class

    def __repr__(self) -> str:
        return f"<type {self.murano_class.name}>"

    def __str__(self) -> str:
        return self.murano_class.name



def real_object(value: Any) -> MuranoObject | None:
    """The object behind an object or a cast view, else None."""
    if isinstance(value, MuranoObject):
        return value
    if isinstance(value, ObjectView):
        return value.real
    return None
