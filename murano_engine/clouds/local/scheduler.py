"""Running one step per resource in dependency order, independent ones in parallel.

Threads come from :mod:`threading`, so the runner works in a plain process and,
green, in one that ``murano_engine.dsl.concurrency.setup()`` monkey-patched.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping

DEFAULT_PARALLEL = 64


def run_ordered(
    keys: Collection[str],
    requires: Mapping[str, Collection[str]],
    step: Callable[[str], None],
    *,
    limit: int = DEFAULT_PARALLEL,
) -> dict[str, BaseException]:
    """Run ``step(key)`` once each key's requirements (among ``keys``) are done.

    After the first failure no new step starts; running ones finish. Returns
    the failures by key (empty when everything succeeded).
    """
    wanted = set(keys)
    # How many requirements each key still waits for, and who waits for each: a key
    # ending makes only its dependents ready (one pass over the graph in all, where
    # looking at every pending key after each step was quadratic in the servers).
    waiting = {key: len(set(requires.get(key, ())) & wanted) for key in wanted}
    dependents: dict[str, list[str]] = {key: [] for key in wanted}
    for key in wanted:
        for other in set(requires.get(key, ())) & wanted:
            dependents[other].append(key)
    ready = sorted((key for key, count in waiting.items() if not count), reverse=True)
    pending = set(wanted)
    failures: dict[str, BaseException] = {}
    running: set[str] = set()
    changed = threading.Condition()

    def work(key: str) -> None:
        error: BaseException | None = None
        try:
            step(key)
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            error = exc
        with changed:
            running.discard(key)
            if error is None:
                for other in sorted(dependents[key], reverse=True):
                    waiting[other] -= 1
                    if not waiting[other]:
                        ready.append(other)
            else:
                failures[key] = error
            changed.notify_all()

    with changed:
        while True:
            while not failures and ready and len(running) < limit:
                key = ready.pop()
                pending.discard(key)
                running.add(key)
                threading.Thread(target=work, args=(key,), daemon=True).start()
            if not running:
                if not failures:
                    for key in sorted(pending):
                        failures[key] = RuntimeError(f"{key} waits on a dependency cycle")
                return failures
            changed.wait()


def reverse(requires: Mapping[str, Collection[str]]) -> dict[str, set[str]]:
    """Dependents instead of requirements: the order for taking things down."""
    dependents: dict[str, set[str]] = {key: set() for key in requires}
    for key, needed in requires.items():
        for other in needed:
            dependents.setdefault(other, set()).add(key)
    return dependents
