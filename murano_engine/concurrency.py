"""Green threads for the engine: the only module that imports eventlet.

Everything concurrent in the engine (``Parallel``, ``pselect``, ``psuper``,
parallel destruction, waiting for agents) goes through these few names, so the
green-thread library can be replaced in one place.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from typing import Any

with warnings.catch_warnings():
    # eventlet announces its maintenance mode on import; it is contained here.
    warnings.simplefilter("ignore")
    import eventlet
import eventlet.event
import eventlet.greenpool
import eventlet.patcher
import eventlet.semaphore

_patched = False


def setup() -> None:
    """Make blocking I/O cooperative (sockets, subprocesses, time.sleep)."""
    global _patched
    if not _patched:
        eventlet.monkey_patch()
        _patched = True


def sleep(seconds: float = 0) -> None:
    eventlet.sleep(seconds)


def current() -> Any:
    """An identity for the running green thread."""
    return eventlet.getcurrent()


def spawn(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Start ``func`` in a new green thread; ``.wait()`` returns its result."""
    return eventlet.spawn(func, *args, **kwargs)


class Event:
    """A one-shot event carrying a value (or an exception) to its waiters."""

    def __init__(self) -> None:
        self._event = eventlet.event.Event()

    def send(self, value: Any = None) -> None:
        if not self._event.ready():
            self._event.send(value)

    def send_exception(self, exc: BaseException) -> None:
        if not self._event.ready():
            self._event.send_exception(exc)

    def ready(self) -> bool:
        return self._event.ready()

    def wait(self, timeout: float | None = None) -> Any:
        if timeout is None:
            return self._event.wait()
        with eventlet.Timeout(timeout, False):
            return self._event.wait()
        raise TimeoutError(f"no result within {timeout} s")


class Semaphore(eventlet.semaphore.Semaphore):
    """A counting semaphore for green threads."""


def run_all(funcs: Iterable[Callable[[], Any]], limit: int | None = None) -> list[Any]:
    """Run every callable in its own green thread, at most ``limit`` at once.

    Returns the results in order. When any of them failed, every one is still
    waited for and then the first failure (in order) is raised.
    """
    funcs = list(funcs)
    if not funcs:
        return []
    if len(funcs) == 1:
        return [funcs[0]()]
    pool = eventlet.greenpool.GreenPool(max(1, limit or len(funcs)))
    threads = [pool.spawn(_capture, f) for f in funcs]
    outcomes = [t.wait() for t in threads]
    for ok, value in outcomes:
        if not ok:
            raise value
    return [value for _, value in outcomes]


def _capture(func: Callable[[], Any]) -> tuple[bool, Any]:
    try:
        return True, func()
    except BaseException as exc:  # noqa: BLE001 - re-raised by run_all
        return False, exc


def run_in_big_thread(func: Callable[[], Any], stack_mb: int = 512) -> Any:
    """Run ``func`` in a real OS thread with a large stack and wait for it.

    Deep MuranoPL recursion needs more C stack than the main thread has;
    green threads started inside run on this thread's stack.
    """
    threading = eventlet.patcher.original("threading")
    outcome: list[tuple[bool, Any]] = []

    def target() -> None:
        try:
            outcome.append((True, func()))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            outcome.append((False, exc))

    previous = threading.stack_size(stack_mb * 1024 * 1024)
    try:
        thread = threading.Thread(target=target, name="murano-engine")
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value
