"""What a local resource type implements, and the record each resource keeps on disk."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from murano_engine.clouds.base import CloudError

if TYPE_CHECKING:
    from murano_engine.clouds.local.addresses import Addresses
    from murano_engine.clouds.local.guest import Guests


class ResourceFailure(CloudError):
    """A resource could not be created, updated or deleted; the message says why."""


@dataclass
class ResourceRecord:
    """One resource of a stack: its state, resolved properties and type data."""

    name: str
    type: str
    status: str = "INIT_COMPLETE"
    reason: str = ""
    id: str = ""
    properties: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    requires: list[str] = field(default_factory=list)

    @property
    def exists(self) -> bool:
        """Whether something physical was made (it must be deleted eventually)."""
        return bool(self.id)

    def to_json(self) -> dict[str, Any]:
        """A shallow copy: ``properties`` and ``data`` are replaced, never edited in place."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ResourceRecord:
        return cls(**data)


class Services(Protocol):
    """The cloud-wide services a resource type may use."""

    lock: threading.RLock
    addresses: Addresses
    guests: Guests
    volumes: Path

    def new_id(self) -> str: ...

    def find(self, physical_id: str, *types: str) -> ResourceRecord | None:
        """A live resource of one of ``types`` (any stack) by id or name."""

    def records(self, *types: str) -> list[ResourceRecord]:
        """Every live resource of one of ``types`` in any stack."""


@dataclass(frozen=True)
class Context:
    """Where a resource operation happens."""

    services: Services
    stack_name: str
    resource: str
    #: Called by ``create`` with the physical id before anything physical is made,
    #: so that a crash in the middle leaves a record to clean up, not an orphan.
    claim: Callable[[str], None] | None = None

    def default_name(self) -> str:
        """Heat's physical name for unnamed resources: stack-resource-random."""
        return f"{self.stack_name}-{self.resource}-{self.services.new_id()[:12]}"

    def require(self, reference: Any, what: str, *types: str) -> ResourceRecord:
        """The live resource ``reference`` names, or a failure naming ``what``."""
        found = self.services.find(str(reference), *types) if reference else None
        if found is None:
            raise ResourceFailure(f"{what} {reference!r} could not be found")
        return found


class ResourceType:
    """A kind of resource (``OS::Neutron::Net`` ...); instances are stateless.

    ``required`` lists groups of alternatives: one property of each group must
    be given. Properties in ``updatable`` change in place through
    :meth:`update`; changing any other one replaces the resource.
    """

    name: ClassVar[str]
    properties: ClassVar[frozenset[str]] = frozenset()
    required: ClassVar[tuple[tuple[str, ...], ...]] = ()
    attributes: ClassVar[frozenset[str]] = frozenset()
    updatable: ClassVar[frozenset[str]] = frozenset()

    def create(self, ctx: Context, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Make the resource; return its physical id and type data."""
        raise NotImplementedError

    def update(self, ctx: Context, record: ResourceRecord, props: dict[str, Any]) -> dict[str, Any]:
        """Apply changed ``updatable`` properties; return the new type data."""
        raise NotImplementedError

    def delete(self, ctx: Context, record: ResourceRecord) -> None:
        """Remove the resource (the default has nothing physical to remove)."""

    def attribute(self, ctx: Context, record: ResourceRecord, name: str) -> Any:
        return record.data.get(name)

    def reference(self, record: ResourceRecord) -> Any:
        """What ``get_resource`` gives (the physical id)."""
        return record.id


class DataOnlyResourceType(ResourceType):
    """A resource that is only a record: created with a fresh id, updated in place.

    Subclasses say what the record holds in ``_data``; ``record`` is None on
    creation and the current record on update.
    """

    def create(self, ctx: Context, props: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return ctx.services.new_id(), self._data(ctx, props, None)

    def update(self, ctx: Context, record: ResourceRecord, props: dict[str, Any]) -> dict[str, Any]:
        return self._data(ctx, props, record)

    @staticmethod
    def _data(ctx: Context, props: dict[str, Any], record: ResourceRecord | None) -> dict[str, Any]:
        raise NotImplementedError
