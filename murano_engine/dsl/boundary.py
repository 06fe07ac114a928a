"""The one boundary between the interpreter and the outside world.

Time, sleeping, random names and ids, and every call to a service the engine
reaches (the cloud, the guest agents) go through an :class:`Outside`: the
executor's own (a :class:`murano_engine.engine.journal.Journal` when the run is
journaled), else the process's current one, which tests replace with
:func:`use`. Nothing else in the engine calls ``time``, ``random`` or ``uuid``
directly.
"""

from __future__ import annotations

import os
import random
import string
import time
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from murano_engine.dsl import concurrency

#: the version (4) and variant (RFC 4122) bits of a random UUID, as ``uuid.uuid4`` sets them
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (4 << 76) | (0x8000 << 48)


class Outside:
    """The live world: real clock, real sleep, random names and ids."""

    def __init__(self, services: dict[str, Any] | None = None) -> None:
        self._counter = 0
        self.services: dict[str, Any] = dict(services or {})

    def now(self) -> float:
        """Seconds since the epoch."""
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        concurrency.sleep(seconds)

    def new_id(self) -> str:
        """A fresh object id (32 hex digits, as Murano's): a random (version 4) UUID's
        hex, made without building a ``uuid.UUID`` (a few microseconds an object)."""
        value = int.from_bytes(os.urandom(16)) & _UUID4_CLEAR | _UUID4_SET
        return f"{value:032x}"

    def random_name(self) -> str:
        """A short unique name: 5 letters, a base-36 millisecond stamp, a counter."""
        self._counter += 1
        letters = "".join(random.choices(string.ascii_lowercase, k=5))
        return f"{letters}{_base36(int(self.now() * 1000))}{_base36(self._counter)}"

    def random_string(self, length: int, alphabet: str) -> str:
        return "".join(random.SystemRandom().choice(alphabet) for _ in range(length))

    # A journal records these; the live world just carries them out.
    cancelled = False

    def check(self) -> None:
        """Raise when the run was asked to stop (never, for the live world)."""

    def value(self, kind: str, scope: str, compute: Callable[[], Any]) -> Any:
        """An answer from outside (a read, a query): ``compute()``."""
        return compute()

    def effect(self, kind: str, scope: str, intent: Callable[[], Any],
               perform: Callable[[Any], Any]) -> Any:
        """A change outside (a plan sent, a stack pushed): ``perform(intent())``."""
        return perform(intent())

    def service(self, name: str) -> Any:
        """A named outside service (``cloud``, ``agents``, ``reporter`` ...)."""
        try:
            return self.services[name]
        except KeyError:
            raise LookupError(f"no outside service named {name!r} is configured") from None


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if not number:
            return out


_current: Outside = Outside()


def outside() -> Outside:
    """The boundary in force."""
    return _current


@contextmanager
def use(replacement: Outside):
    """Run a block with another boundary (a fake clock, a journal, test services)."""
    global _current
    previous, _current = _current, replacement
    try:
        yield replacement
    finally:
        _current = previous
