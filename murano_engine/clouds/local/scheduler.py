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
    needs = {key: set(requires.get(key, ())) & wanted for key in wanted}
    done: set[str] = set()
    failures: dict[str, BaseException] = {}
    running: set[str] = set()
    pending = sorted(wanted)
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
                done.add(key)
            else:
                failures[key] = error
            changed.notify_all()

    with changed:
        while True:
            if not failures:
                for key in [k for k in pending if needs[k] <= done]:
                    if len(running) >= limit:
                        break
                    pending.remove(key)
                    running.add(key)
                    threading.Thread(target=work, args=(key,), daemon=True).start()
            if not running:
                if not failures:
                    for key in pending:
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
