"""Clouds the engine deploys to, behind one :class:`StackService` interface.

:func:`open_cloud` picks OpenStack Heat when the engine config has a ``[heat]``
section saying how to reach it (``auth_url``, or ``url`` plus ``token``), and
the embedded local cloud otherwise (settings in ``[local_cloud]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from murano_engine.clouds.base import (
    DEFAULT_STACK_TIMEOUT,
    CloudError,
    CloudUnavailable,
    Stack,
    StackConflict,
    StackFailed,
    StackNotFound,
    StackService,
    StackTimeout,
    TemplateError,
    push_stack,
    remove_stack,
)

if TYPE_CHECKING:
    from murano_engine.messaging.identities import BrokerIdentities

__all__ = [
    "CloudError",
    "CloudUnavailable",
    "Stack",
    "StackConflict",
    "StackFailed",
    "StackNotFound",
    "StackService",
    "StackTimeout",
    "TemplateError",
    "open_cloud",
    "push_stack",
    "remove_stack",
]


def open_cloud(config: Mapping[str, Mapping[str, Any]],
               identities: BrokerIdentities | None = None,
               broker_address: str | None = None, server_quota: int = -1) -> StackService:
    """The stack service the engine config asks for (sections as dicts).

    Its stack operations are waited for the cloud section's ``stack_timeout``
    seconds, or ``[engine] stack_timeout`` where the cloud has none. The local
    cloud revokes a deleted server's broker identity with ``identities``, and its
    servers reach the broker at ``broker_address`` (the engine's, an AMQP URL whose
    host and port count), whatever their user data names. The local cloud holds at most
    ``server_quota`` servers (-1: no limit); Heat's cloud has Nova's quotas.
    """
    from murano_engine.clouds.heat import HeatStacks, heat_configured

    stack_timeout = float((config.get("engine") or {}).get("stack_timeout")
                          or DEFAULT_STACK_TIMEOUT)
    heat = config.get("heat") or {}
    if heat_configured(heat):
        return HeatStacks.from_config(heat, stack_timeout)
    from murano_engine.clouds.local import LocalCloud

    return LocalCloud.from_config(config.get("local_cloud") or {}, stack_timeout,
                                  identities=identities, broker_address=broker_address,
                                  server_quota=server_quota)
