"""Execution budgets and the limits of operations that could allocate without bound.

Every :class:`~murano_engine.dsl.executor.Executor` (one engine task) has a
:class:`Budget`: a number of steps (statements, loop iterations, yaql lambda
evaluations) and a wall-clock deadline. Counting a step is one
decrement and one comparison; the clock is read once every
:data:`CHECK_EVERY` steps. The ``check_*`` functions refuse an operation
before it allocates: an integer product or power past :data:`MAX_INT_BITS`, a
format field wider than the memory quota, a regular expression that runs
past its time.
"""

from __future__ import annotations

import math
import operator
import os

from yaql.language import exceptions as yaql_exceptions

from murano_engine.dsl import boundary, errors
from murano_engine.dsl.contexts import frame_of
from murano_engine.dsl.limits import (
    DEFAULT_TASK_MEMORY_LIMIT,
    DEFAULT_TASK_STEP_LIMIT,
    DEFAULT_TASK_TIME_LIMIT,
    ITERATOR_LIMIT,
    MEMORY_QUOTA,
)

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

#: Steps between two readings of the clock.
CHECK_EVERY = 1000
#: The largest integer MuranoPL arithmetic makes (8 KiB).
MAX_INT_BITS = 65536
#: Seconds one regular expression match may take (less when the budget has less left).
REGEX_TIMEOUT = 1.0


class Budget:
    """The steps and seconds one task may still spend, and the memory the process may hold
    meanwhile; exhausted, it stays exhausted."""

    __slots__ = ("seconds", "steps", "memory_mb", "left", "_stretch", "_spent", "_deadline",
                 "_base_mb", "_memory_spent")

    def __init__(self, seconds: float | None = DEFAULT_TASK_TIME_LIMIT,
                 steps: int | None = DEFAULT_TASK_STEP_LIMIT,
                 memory_mb: int | None = DEFAULT_TASK_MEMORY_LIMIT) -> None:
        self.seconds = seconds
        self.steps = steps
        self.memory_mb = memory_mb
        #: the process's memory when the task began: the limit is on what it adds (the
        #: process is shared by other tasks, and holds on to memory freed before)
        self._base_mb = resident_mb() if memory_mb else 0
        self._deadline = boundary.outside().monotonic() + seconds if seconds else None
        self._spent = 0
        self._memory_spent = ""  # the error's message once the memory limit was passed
        self._stretch = self.left = min(CHECK_EVERY, steps) if steps else CHECK_EVERY

    @classmethod
    def from_config(cls, config: Any) -> Budget:
        """The budget ``[engine] task_time_limit``, ``task_step_limit`` and
        ``task_memory_limit`` give (0: none)."""
        engine = config["engine"]
        return cls(float(engine["task_time_limit"]) or None,
                   int(engine["task_step_limit"]) or None,
                   int(engine["task_memory_limit"]) or None)

    def spend(self, steps: int) -> None:
        """Count ``steps`` steps at once (the branches a ``pselect`` starts: spawning
        green threads otherwise spends none, and a nested one made millions before the
        memory was next read)."""
        self.left -= steps
        if self.left < 0:
            self.checkpoint()

    def checkpoint(self) -> None:
        """Called when ``left`` ran below zero: count the steps, read the clock."""
        self._spent += self._stretch - self.left
        self._stretch = self.left = 0
        if self.steps and self._spent > self.steps:
            raise errors.StepBudgetExceededError(
                f"the task's step budget of {self.steps} steps is spent")
        self.check_time()
        if self._memory_spent:
            raise errors.MemoryBudgetExceededError(self._memory_spent)
        if self.memory_mb:
            grown = resident_mb() - self._base_mb
            if grown > self.memory_mb:
                self._stretch = self.left = 0
                self._memory_spent = (
                    f"the engine process grew by {grown} MB while the task ran, past the "
                    f"task's memory limit of {self.memory_mb} MB")
                raise errors.MemoryBudgetExceededError(self._memory_spent)
        self._stretch = self.left = (min(CHECK_EVERY, self.steps - self._spent)
                                     if self.steps else CHECK_EVERY)

    def release(self) -> None:
        """At the task's end: free what it left and give it back to the system when it
        grew much. Its executor and objects refer to each other, so what they held is
        freed by Python's cycle collector only, which counts allocations, not bytes: a
        few big strings never wake it. And the C allocator keeps freed blocks: a process
        that once held gigabytes for one task would go on holding them for every other."""
        if self.memory_mb and resident_mb() - self._base_mb > RELEASE_AFTER_MB:
            import gc  # here: only a task that grew the process much needs it
            gc.collect()
            release_freed_memory()

    def check_time(self) -> None:
        if self._deadline is not None and boundary.outside().monotonic() > self._deadline:
            self._stretch = self.left = 0
            raise errors.TimeBudgetExceededError(
                f"the task's wall-clock budget of {self.seconds:g} s is spent")

    def seconds_left(self) -> float:
        """Seconds until the deadline (infinite without one)."""
        if self._deadline is None:
            return math.inf
        return max(0.0, self._deadline - boundary.outside().monotonic())


#: how much a task must have grown the process for :meth:`Budget.release` to trim it
RELEASE_AFTER_MB = 64


def release_freed_memory() -> None:
    """glibc's ``malloc_trim(0)``: freed memory back to the system (nothing elsewhere)."""
    import ctypes  # here: only a task that grew the process much needs it
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def resident_mb() -> int:
    """The process's resident memory, in megabytes (0 where /proc is missing)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE") // (1024 * 1024)


def budget_of(ctx: Any) -> Budget | None:
    """The budget of the run ``ctx`` belongs to."""
    frame = frame_of(ctx)
    return frame.executor.budget if frame is not None else None


def sleep(ctx: Any, seconds: float) -> None:
    """Sleep ``seconds``, but no longer than the budget has left (then it is spent)."""
    frame = frame_of(ctx)
    budget = frame.executor.budget if frame is not None else None
    outside = frame.executor.outside if frame is not None else boundary.outside()
    left = budget.seconds_left() if budget is not None else math.inf
    outside.sleep(min(seconds, left))
    if budget is not None and seconds >= left:
        budget.check_time()


def check_product(a: int, b: int) -> None:
    """Refuse ``a * b`` when the product could exceed :data:`MAX_INT_BITS`."""
    if a.bit_length() + b.bit_length() > MAX_INT_BITS:
        raise errors.ValueLimitExceededError(
            f"integer product larger than {MAX_INT_BITS} bits")


def check_replacement(text: str, old: str, new: str, count: int = -1,
                      quota: int = MEMORY_QUOTA) -> None:
    """Refuse ``text.replace(old, new, count)`` whose result would pass ``quota``, before
    it is made (each replacement multiplies the text: a short one with a long
    replacement asks for gigabytes)."""
    found = text.count(old) if old else len(text) + 1
    if count >= 0:
        found = min(found, count)
    if len(text) + found * (len(new) - len(old)) > quota:
        raise yaql_exceptions.MemoryQuotaExceededException()


def bounded_replacement(text: str, make: Callable[[Any], str],
                        quota: int = MEMORY_QUOTA) -> Callable[[Any], str]:
    """A regex ``sub()`` replacement over ``text``: ``make(match)``'s text, each one
    counted as it is made and the result refused once it would pass ``quota`` (the
    text, its matches and a replacement are each within it, their product not)."""
    written = len(text)

    def replacement(match: Any) -> str:
        nonlocal written
        made = make(match)
        written += len(made) - (match.end() - match.start())
        if written > quota:
            raise yaql_exceptions.MemoryQuotaExceededException()
        return made
    return replacement


def check_repetition(a: Any, b: Any) -> None:
    """Refuse ``sequence * count`` (either order) whose result would pass the memory
    quota (strings) or the iterator limit (lists), before it is made."""
    sequence, count = (a, b) if type(b) is int else (b, a)
    if type(count) is not int or count <= 0:
        return
    if isinstance(sequence, str):
        if len(sequence) * count > MEMORY_QUOTA:
            raise yaql_exceptions.MemoryQuotaExceededException()
    elif isinstance(sequence, (tuple, list)) and len(sequence) * count > ITERATOR_LIMIT:
        raise yaql_exceptions.CollectionTooLargeException(ITERATOR_LIMIT)


def check_power(base: Any, exponent: Any) -> None:
    """Refuse an integer ``base ** exponent`` larger than :data:`MAX_INT_BITS`."""
    if type(base) is int and type(exponent) is int and exponent > 0 and abs(base) > 1 \
            and (abs(base).bit_length() - 1) * exponent > MAX_INT_BITS:
        raise errors.ValueLimitExceededError(
            f"integer power larger than {MAX_INT_BITS} bits")


def bounded_range(start: int, stop: int, step: int) -> Iterator[int]:
    """yaql's ``range(start, stop, step)``: an iterator over it, a :class:`LongRange` past
    :data:`ITERATOR_LIMIT` items (made without making its items)."""
    items = range(start, stop, step)
    return iter(items) if len(items) <= ITERATOR_LIMIT else LongRange(items)


class LongRange:
    """A ``range()`` longer than the iterator limit, as yaql gives it under Murano: lazy,
    so a query may take its first items (``range(10**6).where($ > 5).first()``), while
    drawing more than :data:`ITERATOR_LIMIT` of them is yaql's
    CollectionTooLargeException; its ``len()`` is the items left, counted without
    drawing them (yaql's count of an iterator runs through it)."""

    __slots__ = ("_items", "_drawn")

    def __init__(self, items: range) -> None:
        self._items = iter(items)
        self._drawn = 0

    def __iter__(self) -> LongRange:
        return self

    def __next__(self) -> int:
        if self._drawn >= ITERATOR_LIMIT:
            raise yaql_exceptions.CollectionTooLargeException(ITERATOR_LIMIT)
        self._drawn += 1
        return next(self._items)

    def __len__(self) -> int:
        return operator.length_hint(self._items)


def check_width(width: int) -> None:
    """Refuse a format width or precision past the memory quota."""
    if width > MEMORY_QUOTA:
        raise errors.ValueLimitExceededError(
            f"format width or precision {width} exceeds the memory quota of {MEMORY_QUOTA}")


class Regex:
    """A pattern compiled by ``regex()`` (with the ``regex`` package)."""

    __slots__ = ("compiled",)

    def __init__(self, compiled: Any) -> None:
        self.compiled = compiled

    def __repr__(self) -> str:
        return f"regex({self.compiled.pattern!r})"


def regex_timeout(ctx: Any) -> float:
    """How long one regular expression may run: :data:`REGEX_TIMEOUT`, or what is left."""
    budget = budget_of(ctx)
    return min(REGEX_TIMEOUT, budget.seconds_left()) if budget is not None else REGEX_TIMEOUT


def run_regex(ctx: Any, pattern: Regex, run: Any) -> Any:
    """``run(compiled, timeout)``; past the timeout a :class:`RegexTimeoutError`."""
    timeout = regex_timeout(ctx)
    try:
        return run(pattern.compiled, timeout)
    except TimeoutError:
        raise errors.RegexTimeoutError(
            f"regular expression {pattern.compiled.pattern[:80]!r} ran longer than "
            f"{timeout:g} s") from None


def compile_regex(pattern: str, flags: int = 0) -> Regex:
    """``pattern`` compiled with the ``regex`` package (imported on first use: it costs
    start-up time), which keeps ``re``'s syntax and takes a timeout."""
    import regex
    try:
        return Regex(regex.compile(pattern, flags | regex.VERSION0))
    except regex.error as exc:
        raise errors.DslInvalidOperationError(f"invalid regular expression: {exc}") from None


def regex_search(ctx: Any, pattern: str | Regex, text: str) -> bool:
    """Whether ``pattern`` matches in ``text``, within :func:`regex_timeout` seconds."""
    compiled = pattern if isinstance(pattern, Regex) else compile_regex(pattern)
    return run_regex(ctx, compiled, lambda p, t: p.search(text, timeout=t) is not None)
