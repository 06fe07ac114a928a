"""Frozen records without dataclasses: making a frozen dataclass execs generated code
(about 5M instructions a class), which every start-up of the engine would pay."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


class FrozenRecord:
    """A value of named fields (its ``__slots__``), as a frozen dataclass is: shown as
    ``Name(field=value, ...)``, equal to a record of its own class with equal fields,
    hashed by them, read-only after ``__init__`` (which sets them with :meth:`_set`)."""

    __slots__ = ()

    def _set(self, **fields: Any) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._fields() == other._fields()  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return type(self), self._fields()
