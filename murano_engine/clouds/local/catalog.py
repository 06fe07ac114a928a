"""The resource types the local cloud understands, by Heat type name."""

from __future__ import annotations

from murano_engine.clouds.local import compute, network, software, storage
from murano_engine.clouds.local.resource import ResourceType

RESOURCE_TYPES: dict[str, ResourceType] = {
    cls.name: cls() for module in (network, compute, storage, software) for cls in module.TYPES
}
