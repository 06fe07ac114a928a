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
import time
from collections.abc import Callable
from contextlib import contextmanager

from murano_engine.dsl import concurrency

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any


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
        """A fresh object id: a random (version 4) UUID's 32 hex digits, as Murano's."""
        # Made here rather than by ``uuid``, whose import (``platform`` with it) costs
        # start-up more than a short run makes ids.
        raw = bytearray(os.urandom(16))
        raw[6] = raw[6] & 0x0F | 0x40  # version 4
        raw[8] = raw[8] & 0x3F | 0x80  # RFC 4122 variant
        return raw.hex()

    def random_name(self) -> str:
        """A short unique name: 5 letters, a base-36 millisecond stamp, a counter."""
        import random  # here, as below: most runs never make a name
        import string
        self._counter += 1
        letters = "".join(random.choices(string.ascii_lowercase, k=5))
        return f"{letters}{_base36(int(self.now() * 1000))}{_base36(self._counter)}"

    def random_string(self, length: int, alphabet: str) -> str:
        import random
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
