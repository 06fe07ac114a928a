"""The local cloud's dependency-ordered runner (:func:`run_ordered`)."""

from __future__ import annotations

import threading

from murano_engine.clouds.local.scheduler import reverse, run_ordered


def test_each_step_runs_once_after_its_requirements():
    requires = {"port": {"net"}, "server": {"port", "net"}, "fip": {"port"}, "net": set()}
    done: list[str] = []
    lock = threading.Lock()

    def step(key: str) -> None:
        with lock:
            assert requires[key] <= set(done), f"{key} ran before {requires[key]}"
            done.append(key)

    assert run_ordered(requires, requires, step) == {}
    assert sorted(done) == sorted(requires)
    taken_down: list[str] = []
    assert run_ordered(requires, reverse(requires), taken_down.append) == {}
    assert taken_down.index("server") < taken_down.index("port") < taken_down.index("net")


def test_a_cycle_and_a_failure_leave_their_dependents_unrun():
    ran: list[str] = []

    def step(key: str) -> None:
        ran.append(key)
        if key == "bad":
            raise ValueError("no")

    failures = run_ordered(["a", "b", "bad", "after"], {"a": {"b"}, "b": {"a"},
                                                        "after": {"bad"}}, step)
    assert "after" not in ran and set(ran) == {"bad"}
    assert isinstance(failures["bad"], ValueError)


def test_a_thousand_independent_chains_run_within_the_limit():
    """200 servers' resources: each chain in order, at most ``limit`` at once."""
    requires = {f"{kind}{n}": ({f"{before}{n}"} if before else set())
                for n in range(200) for kind, before in
                (("net", ""), ("port", "net"), ("server", "port"), ("fip", "port"),
                 ("volume", ""))}
    most = [0]
    running: set[str] = set()
    lock = threading.Lock()

    def step(key: str) -> None:
        with lock:
            running.add(key)
            most[0] = max(most[0], len(running))
        with lock:
            running.discard(key)

    assert run_ordered(requires, requires, step, limit=8) == {}
    assert 1 <= most[0] <= 8
