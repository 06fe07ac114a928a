"""The stack service every cloud offers the engine, and the push logic on top of it.

A cloud holds named stacks built from HOT templates. :class:`StackService` is
what ``io.murano.system.HeatStack`` talks to; the Heat backend and the local
cloud implement it. :func:`push_stack` and :func:`remove_stack` carry the
service-level part of HeatStack's push and delete: create or update, delete
when nothing is left, retry conflicts, wait for the stack to settle, then read
its outputs. Waiting uses the engine's clock and sleep from
:func:`murano_engine.dsl.boundary.outside`.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from murano_engine.dsl.boundary import outside
from murano_engine.dsl.limits import DEFAULT_STACK_TIMEOUT
from murano_engine.dsl.limits import DEFAULT_STATE_DIR as DEFAULT_STATE_DIR  # for the clouds

LOG = logging.getLogger(__name__)

TRANSIENT_RETRIES = 4

T = TypeVar("T")


class CloudError(Exception):
    """Base of every error a cloud reports."""


class TemplateError(CloudError, ValueError):
    """The template or its parameters are invalid; nothing was changed."""


class StackNotFound(CloudError, LookupError):
    """The named stack does not exist."""


class StackConflict(CloudError):
    """The stack is busy with another operation (HTTP 409); retry later."""


class CloudUnavailable(CloudError):
    """The cloud could not be reached or answered with a server error."""


class StackTimeout(CloudError, TimeoutError):
    """The stack did not settle within the allowed time."""


class StackFailed(CloudError):
    """The stack settled in a failed or unexpected state."""

    def __init__(self, stack: Stack, expected: str | None = None) -> None:
        self.stack = stack
        wanted = f" (expected {expected})" if expected else ""
        reason = stack.status_reason or "no reason given"
        super().__init__(f"Stack {stack.name} is {stack.status}{wanted}: {reason}")


@dataclass(frozen=True)
class Stack:
    """A snapshot of one stack as the cloud reports it."""

    name: str
    id: str
    status: str
    status_reason: str = ""
    outputs: dict[str, Any] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    template: dict[str, Any] | None = None
    created: str | None = None
    updated: str | None = None

    @property
    def in_progress(self) -> bool:
        return self.status.endswith("_IN_PROGRESS")

    @property
    def failed(self) -> bool:
        return self.status.endswith("_FAILED")

    @property
    def stamp(self) -> tuple[str, str | None, str | None]:
        """What changes whenever Heat starts a new operation on the stack."""
        return self.id, self.created, self.updated


class StackService(ABC):
    """Named HOT stacks in one cloud region.

    ``create``, ``update`` and ``delete`` start an operation and return at
    once (as Heat's API does); :meth:`wait` follows it to the end.
    """

    def __init__(
        self, *, timeout: float = DEFAULT_STACK_TIMEOUT, poll_interval: float = 2.0
    ) -> None:
        self.timeout = timeout
        self.poll_interval = poll_interval

    @abstractmethod
    def get(self, name: str, template: bool = True) -> Stack | None:
        """The stack with outputs, parameters and (unless ``template`` is false) its
        template; None when absent."""

    def peek(self, name: str) -> Stack | None:
        """A cheaper snapshot for polling: status and timestamps are enough."""
        return self.get(name)

    @abstractmethod
    def create(
        self,
        name: str,
        template: dict[str, Any],
        parameters: dict[str, Any] | None = None,
        files: dict[str, str] | None = None,
        environment: dict[str, Any] | None = None,
    ) -> None:
        """Start creating a stack. Raises TemplateError or StackConflict."""

    @abstractmethod
    def update(
        self,
        name: str,
        template: dict[str, Any],
        parameters: dict[str, Any] | None = None,
        files: dict[str, str] | None = None,
        environment: dict[str, Any] | None = None,
    ) -> None:
        """Start replacing a stack's template. Raises StackNotFound, TemplateError,
        StackConflict."""

    @abstractmethod
    def delete(self, name: str) -> None:
        """Start deleting a stack. Raises StackNotFound or StackConflict."""

    @abstractmethod
    def close(self) -> None:
        """Release what the service holds (connections, running guests)."""

    def settle(self) -> None:
        """Wait until the servers that stack operations let go are released.

        Nothing to do for a real cloud (a stack operation ends once its servers
        are deleted); the local cloud releases servers in the background so that
        those of several updates go side by side, and a task waits here before it
        reports its end. Raises CloudError naming the releases that failed.
        """
        return None

    def guest_failure(self, queue: str) -> str | None:
        """Why the server whose agent consumes ``queue`` is in ERROR, naming it and its
        agent's last output; None when it is not (or the cloud cannot tell: a real
        cloud's servers are not watched)."""
        return None

    def attach_agent(self, queue: str) -> None:
        """Make sure the guest agent consuming ``queue`` can reach the broker.

        Nothing to do for a real cloud; the local cloud takes up the stack of the
        server whose agent it is (servers of an earlier run reach the broker only
        through the engine that holds their stack).
        """
        return None

    def let_go(self, names: Iterable[str]) -> None:
        """This process is done with stacks ``names`` for now (a task of murano-api or a
        worker ended): nothing for a real cloud; the local cloud gives their locks and
        their servers' agents up, for whichever process runs the next task of theirs."""
        return None

    def detach_agent(self, queue: str) -> None:
        """The broker user of ``queue``'s agent is about to be revoked (its instance is
        released): nothing for a real cloud; the local cloud stops that agent first, so
        it does not reconnect, refused, until its server is deleted."""
        return None

    def wait(
        self,
        name: str,
        timeout: float | None = None,
        *,
        since: Stack | None = None,
        raise_on_failure: bool = True,
        template: bool = True,
    ) -> Stack | None:
        """Poll until the stack settles; return it (None once it is gone).

        ``since`` is the snapshot taken before the operation was started: a
        settled state still carrying its timestamps is the previous operation's
        and is waited past. A ``*_FAILED`` end raises :class:`StackFailed`
        carrying Heat's reason unless ``raise_on_failure`` is false. Transport
        errors are retried a few times with growing pauses. ``template``: whether the
        settled stack is read with its template (see :meth:`get`).
        """
        world = outside()
        limit = self.timeout if timeout is None else timeout
        deadline = world.monotonic() + limit
        errors = 0
        last: Stack | None = None
        while True:
            try:
                last = self.peek(name)
                errors = 0
            except CloudUnavailable as exc:
                errors += 1
                if errors > TRANSIENT_RETRIES:
                    raise
                LOG.warning("Polling stack %s failed (%s); retrying", name, exc)
                pause = self.poll_interval * 2**errors
            else:
                if last is None:
                    return None
                stale = since is not None and last.stamp == since.stamp
                if not last.in_progress and not stale:
                    settled = self.get(name, template)
                    if settled is not None and settled.failed and raise_on_failure:
                        raise StackFailed(settled)
                    return settled
                pause = self.poll_interval
            if world.monotonic() + pause > deadline:
                state = last.status if last is not None else "unreachable"
                raise StackTimeout(f"Stack {name} is still {state} after {limit:g} s")
            world.sleep(pause)


def push_stack(
    service: StackService,
    name: str,
    template: dict[str, Any],
    parameters: dict[str, Any] | None = None,
    files: dict[str, str] | None = None,
    environment: dict[str, Any] | None = None,
    *,
    timeout: float | None = None,
    conflict_delay: float = 3.0,
    max_conflict_delay: float = 30.0,
) -> dict[str, Any]:
    """Make stack ``name`` match ``template`` and return its outputs.

    Creates the stack when absent, updates it otherwise, deletes it when the
    template has no resources left. Conflicts (another operation running)
    are retried with a growing pause; the whole push is bounded by
    ``timeout`` (the service's default when None).
    """

    def attempt(deadline: float) -> dict[str, Any]:
        current = service.wait(name, _left(deadline), raise_on_failure=False)
        if not template.get("resources"):
            if current is not None:
                _delete_and_wait(service, name, _left(deadline))
            return {}
        if current is None:
            service.create(name, template, parameters, files, environment)
            expected = "CREATE_COMPLETE"
        else:
            service.update(name, template, parameters, files, environment)
            expected = "UPDATE_COMPLETE"
        settled = service.wait(name, _left(deadline), since=current)
        if settled is None:
            raise StackNotFound(f"Stack {name} vanished while it was being pushed")
        if settled.status != expected:
            raise StackFailed(settled, expected)
        return dict(settled.outputs)

    return _retrying_conflicts(service, name, attempt, timeout, conflict_delay, max_conflict_delay)


def remove_stack(
    service: StackService,
    name: str,
    *,
    timeout: float | None = None,
    conflict_delay: float = 3.0,
    max_conflict_delay: float = 30.0,
) -> None:
    """Delete stack ``name`` (if present) and wait until it is gone."""

    def attempt(deadline: float) -> None:
        if service.wait(name, _left(deadline), raise_on_failure=False) is not None:
            _delete_and_wait(service, name, _left(deadline))

    _retrying_conflicts(service, name, attempt, timeout, conflict_delay, max_conflict_delay)


def _retrying_conflicts(
    service: StackService,
    name: str,
    attempt: Callable[[float], T],
    timeout: float | None,
    delay: float,
    max_delay: float,
) -> T:
    """Run ``attempt(deadline)`` until it gets past HTTP 409 conflicts."""
    world = outside()
    limit = service.timeout if timeout is None else timeout
    deadline = world.monotonic() + limit
    while True:
        try:
            return attempt(deadline)
        except StackConflict as exc:
            if world.monotonic() + delay > deadline:
                raise StackTimeout(f"Stack {name} stayed busy for {limit:g} s: {exc}") from exc
            LOG.info("Stack %s is busy (%s); retrying in %g s", name, exc, delay)
            world.sleep(delay)
            delay = min(delay * 2, max_delay)


def _left(deadline: float) -> float:
    return deadline - outside().monotonic()


def _delete_and_wait(service: StackService, name: str, timeout: float) -> None:
    try:
        service.delete(name)
    except StackNotFound:
        return
    left = service.wait(name, timeout)
    if left is not None and left.status != "DELETE_COMPLETE":
        raise StackFailed(left, "DELETE_COMPLETE")
