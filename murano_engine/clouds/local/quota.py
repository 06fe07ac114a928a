"""The local cloud's servers quota (``[quotas] servers``), as a rule of its own: the
cloud checks its pushes with it, and a plan's recording cloud checks the pushes it
records, without importing the cloud."""

from __future__ import annotations

from collections.abc import Mapping

from murano_engine.clouds.base import TemplateError


class QuotaExceeded(TemplateError):
    """A push would take the cloud's servers past its quota; nothing was changed."""


def check_server_quota(quota: int, name: str, by_stack: Mapping[str, int],
                       servers: int) -> None:
    """Refuse (:class:`QuotaExceeded`) stack ``name`` holding ``servers`` servers when
    that takes the servers of every stack (``by_stack``, ``name``'s as it is now)
    past ``quota``, unless the stack holds no more than it does now."""
    before = by_stack.get(name, 0)
    others = sum(count for stack, count in by_stack.items() if stack != name)
    after = others + servers
    if after > quota and after > others + before:
        raise QuotaExceeded(
            f"Quota exceeded: the servers quota is {quota}, and stack {name} would take "
            f"the project's servers to {after} ({servers} in the stack, {others} in its "
            "other stacks); the stack was not changed and no server was made")
