"""Green threads for the engine: the only module that imports eventlet.

Everything concurrent in the engine (``Parallel``, ``pselect``, ``psuper``,
waiting for agents) goes through these few names, so the green-thread library
can be replaced in one place. eventlet (and greenlet, a C++ library the dynamic
loader takes milliseconds to link) is imported on first use, so commands that
never run anything concurrently start faster.
"""

from __future__ import annotations

import _thread
import contextlib
import contextvars
import itertools
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

# The engine talks to loopback and configured hosts only; eventlet's green DNS
# (dnspython) would add a tenth of a second to every start-up.
os.environ.setdefault("EVENTLET_NO_GREENDNS", "yes")

_patched = False
#: Real threads for blocking calls made from green threads (:func:`blocking`): a
#: destroy's unmounts and image removals, many servers' at once, wait for the kernel.
BLOCKING_THREADS = 4


def _eventlet() -> Any:
    """eventlet, imported on first use, and green threads told apart from then on (also
    when something else imported eventlet first: then every green thread was taken for
    its OS thread, and a method's lock let them all in)."""
    if not _green:
        with warnings.catch_warnings(), _without_pyopenssl():
            # eventlet announces its maintenance mode on import; it is contained here.
            warnings.simplefilter("ignore")
            import eventlet  # noqa: F401
            import eventlet.event  # noqa: F401
            import eventlet.greenpool  # noqa: F401
            import eventlet.patcher  # noqa: F401
            import eventlet.semaphore  # noqa: F401
            _green_threads_may_run()
    return sys.modules["eventlet"]


@contextlib.contextmanager
def _without_pyopenssl() -> Iterator[None]:
    """pyOpenSSL out of reach while eventlet is imported (it is importable again after).

    eventlet's green sockets import pyOpenSSL, where installed, only to catch its
    errors on pyOpenSSL connections, which the engine never makes; the import (with
    cryptography's X.509 modules) is a third of eventlet's, and the more modules there
    are, the longer ``monkey_patch`` walks them. Without it eventlet defines those
    errors itself.
    """
    if "OpenSSL" in sys.modules:
        yield
        return
    sys.modules["OpenSSL"] = None  # type: ignore[assignment]  # import raises ImportError
    try:
        yield
    finally:
        if sys.modules.get("OpenSSL", 0) is None:
            del sys.modules["OpenSSL"]


def setup() -> None:
    """Make blocking I/O cooperative (sockets, subprocesses, time.sleep)."""
    global _patched
    if not _patched:
        _eventlet().monkey_patch()
        _patched = True
        sys.setswitchinterval(SWITCH_INTERVAL)


#: How long a real thread (the relay's loop) may hold the interpreter while the green
#: threads' one wants it back after a system call (a file written, a socket read):
#: Python's 5 ms made each such call of the hub's wait up to that long behind a busy
#: relay, which a deployment of many servers makes thousands of.
SWITCH_INTERVAL = 0.0005


def sleep(seconds: float = 0) -> None:
    _eventlet().sleep(seconds)


#: An identity for the running green thread, which every method call (its lock) asks:
#: the OS thread's until eventlet (the only maker of green threads) is imported, then
#: :func:`_green_identity`.
current: Callable[[], Any] = _thread.get_ident
# Kept as imported: eventlet's monkey patching replaces ``_thread.get_ident``.
_thread_identity = _thread.get_ident


def _green_threads_may_run() -> None:
    global current, _getcurrent, _green
    import greenlet
    _getcurrent = greenlet.getcurrent
    current = _green_identity
    _green = True


#: whether :func:`_green_threads_may_run` ran
_green = False


def _green_identity() -> Any:
    """The running greenlet, or for a thread's main greenlet its thread's identity, as
    before eventlet was imported: a lock taken then is still its owner's."""
    green = _getcurrent()
    return green if green.parent is not None else _thread_identity()


_getcurrent: Callable[[], Any]


class Event:
    """A one-shot event carrying a value (or an exception) to its waiters."""

    def __init__(self) -> None:
        self._event = _eventlet().event.Event()

    def send(self, value: Any = None) -> None:
        if not self._event.ready():
            self._event.send(value)

    def wait(self, timeout: float | None = None) -> Any:
        if timeout is None:
            return self._event.wait()
        with _eventlet().Timeout(timeout, False):
            return self._event.wait()
        raise TimeoutError(f"no result within {timeout} s")


class OneAtATime:
    """Blocking calls (a disk sync) made one at a time, with the lock held across each.

    Made after :func:`setup`, each call runs in a real thread while the other green
    threads go on (a green lock, so waiting for it switches too); made before, calls
    run in the caller under a plain lock. ``with one_at_a_time:`` holds the lock,
    :meth:`call` makes a call inside it.
    """

    def __init__(self) -> None:
        self._green = _patched
        if self._green:
            import eventlet.tpool
            # one call at a time needs one thread; :func:`blocking`'s calls share them
            eventlet.tpool.set_num_threads(BLOCKING_THREADS)
            self._lock: Any = _eventlet().semaphore.Semaphore(1)
        else:
            self._lock = _thread.allocate_lock()

    def __enter__(self) -> OneAtATime:
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def call(self, func: Callable[..., Any], *args: Any) -> Any:
        if self._green:
            return sys.modules["eventlet.tpool"].execute(func, *args)
        return func(*args)


class _Branch:
    """Where a green thread sits in the tree of ``run_all`` calls."""

    __slots__ = ("path", "spawns")

    def __init__(self, path: str) -> None:
        self.path = path
        self.spawns = itertools.count()


_ROOT = _Branch("")
_branch: contextvars.ContextVar[_Branch] = contextvars.ContextVar("branch", default=_ROOT)


def branch() -> str:
    """The path of the running branch: ``""`` at the top, ``/<spawn>.<index>`` added by
    each :func:`run_all` level. The same code makes the same paths, however the green
    threads interleave (what the deployment journal keys entries by)."""
    return _branch.get().path


@contextlib.contextmanager
def new_tree() -> Iterator[None]:
    """Run a block as the root of a tree of branches of its own (one engine run), so its
    branch paths do not depend on what ran before it in the process."""
    token = _branch.set(_Branch(""))
    try:
        yield
    finally:
        _branch.reset(token)


def run_all(funcs: Iterable[Callable[[], Any]], limit: int | None = None) -> list[Any]:
    """Run every callable in its own green thread (a :func:`branch` of its own), at most
    ``limit`` at once.

    Returns the results in order. When any of them failed, every one is still
    waited for and then the first failure (in order) is raised; the others are let
    go as they happen (each holds its branch's frames, and what they made, until then).
    """
    parent = _branch.get()
    spawn = next(parent.spawns)
    funcs = [_in_branch(f"{parent.path}/{spawn}.{index}", f) for index, f in enumerate(funcs)]
    if not funcs:
        return []
    if len(funcs) == 1:
        return [funcs[0]()]
    failure = _FirstFailure()
    pool = _eventlet().greenpool.GreenPool(max(1, limit or len(funcs)))
    threads = [pool.spawn(failure.capture, index, f) for index, f in enumerate(funcs)]
    results = [t.wait() for t in threads]
    if failure.error is not None:
        raise failure.error
    return results


class BranchStop(BaseException):  # noqa: N818 - a stop, not an error MuranoPL may catch
    """Ends the branch it is raised in and only it: :func:`run_all` gives None as that
    branch's result while its siblings and its parent go on. A plan raises it where
    what follows depends on a script's result it cannot know
    (:mod:`murano_engine.engine.plan`). A BaseException, so MuranoPL's ``Try``/``Catch``
    never takes it for an error (its ``Finally`` blocks still run)."""


def _in_branch(path: str, func: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        token = _branch.set(_Branch(path))
        try:
            return func()
        except BranchStop:
            return None
        finally:
            _branch.reset(token)
    return run


class _FirstFailure:
    """The failure of the first branch (in order) that failed, of those run so far."""

    __slots__ = ("index", "error")

    def __init__(self) -> None:
        self.index = -1
        self.error: BaseException | None = None

    def capture(self, index: int, func: Callable[[], Any]) -> Any:
        try:
            return func()
        except BaseException as exc:  # noqa: BLE001 - re-raised by run_all
            if self.error is None or index < self.index:
                self.index, self.error = index, exc
            return None


#: The stack of a real thread that runs MuranoPL: MAX_CALL_DEPTH method calls of the
#: interpreter, each with yaql's own recursion below it (the deepest legitimate
#: recursion runs in 8 MB, a main thread's usual stack: eight times that). Only such
#: threads get it: the others (requests, relays, the clouds' operations) keep the
#: platform's default, so a process with many of them stays within an address-space
#: limit (``ulimit -v``).
INTERPRETER_STACK = 64 << 20
_stack_size_lock = _thread.allocate_lock()


@contextlib.contextmanager
def interpreter_stacks() -> Iterator[None]:
    """Threads started (``start()``) inside the block, a thread pool's as it submits,
    get :data:`INTERPRETER_STACK` bytes of stack."""
    import threading
    with _stack_size_lock:
        previous = threading.stack_size(INTERPRETER_STACK)
        try:
            yield
        finally:
            threading.stack_size(previous)


def unpatched(name: str) -> Any:
    """Module ``name`` as it was before :func:`setup` patched it (eventlet keeps the
    originals): the real ``select.epoll``, which the green ``select`` lacks."""
    if "eventlet.patcher" not in sys.modules:
        import importlib
        return importlib.import_module(name)
    return sys.modules["eventlet.patcher"].original(name)


def blocking(func: Callable[..., Any], *args: Any) -> Any:
    """``func(*args)``, a call that blocks in the kernel (an unmount): after :func:`setup`
    in one of a few real threads while the other green threads go on, else in the
    caller (a real thread itself)."""
    if not _patched:
        return func(*args)
    import eventlet.tpool
    eventlet.tpool.set_num_threads(BLOCKING_THREADS)  # (before its first call only)
    return eventlet.tpool.execute(func, *args)
