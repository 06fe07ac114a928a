"""The script calls of one plan, journaled so that each runs at most once.

A restarted agent runs an interrupted plan's Body again. Before it does,
:meth:`ScriptCalls.settle` gives every call the earlier attempt started an
outcome (:func:`murano_agent.detached.recover`: its exit code, or its end after
waiting for it, or "interrupted"); then each call of the Body, in order, returns
its journaled outcome without running, and only calls never started run (a call
journaled whose wrapper never got the go-ahead is withdrawn: it never began).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from pathlib import Path

from murano_agent import detached
from murano_agent.plans import ERROR_UNEXPECTED, PlanError
from murano_agent.process import Completed
from murano_agent.storage import PlanStore, ScriptCall

LOG = logging.getLogger(__name__)

#: Seconds left before the plan's deadline.
Remaining = Callable[[], float]
#: Makes a call's command: (argv, or a shell line when a str; the folder it runs in).
Command = Callable[[], tuple[list[str] | str, Path]]


class ScriptCalls:
    """The journaled script calls of pending plan ``seq`` (one attempt's view)."""

    def __init__(self, store: PlanStore, seq: str, plan_timeout: float) -> None:
        self._store = store
        self._seq = seq
        self._timeout = plan_timeout
        self._calls = store.calls(seq)
        self._next = 0
        #: Whether an earlier attempt of the plan started scripts (whose files stay).
        self.resumed = bool(self._calls)

    def settle(self, remaining: Remaining) -> None:
        """Give each call an earlier attempt started, and left without an outcome, one."""
        for index, call in sorted(self._calls.items()):
            if call.outcome is not None:
                continue
            limit = min(remaining(), call.started + self._timeout - time.time())
            LOG.info(
                "script call %d (%s) was running when the agent stopped; settling it",
                index,
                call.name,
            )
            prefix = self._store.run_prefix(self._seq, index)
            done = detached.recover(prefix, call.pgid, call.ticks, call.boot, limit)
            if detached.never_started(prefix):
                LOG.info("script call %d (%s) never began (the agent stopped before its "
                         "go-ahead); it runs when the plan calls it", index, call.name)
                self._store.call_withdrawn(self._seq, index)
                continue
            LOG.info("script call %d (%s): %s", index, call.name, _describe(done))
            self._store.call_finished(
                self._seq, index, dataclasses.asdict(done), done.exit_code is not None
            )

    def run(
        self,
        name: str,
        command: Command,
        input: str | None,
        remaining: Remaining,
        replay: bool = True,
    ) -> Completed:
        """Script ``name``'s next call: its journaled outcome when this call (by order)
        already ran, else ``command()`` run now. ``replay=False``: always a new call."""
        index = self._next if replay else max(self._calls, default=-1) + 1
        self._next = index + 1
        call = self._calls.get(index)
        if call is not None:
            if call.name != name:
                raise PlanError(
                    ERROR_UNEXPECTED,
                    f"after the agent restarted, the plan Body called script {name!r} as call "
                    f"{index + 1}, where it had called {call.name!r}: it is not run (a Body "
                    "must call the same scripts given the same results)",
                )
            return Completed(**call.outcome)
        argv, cwd = command()

        def journal(pgid: int | None, ticks: int | None) -> None:
            started = ScriptCall(name, pgid, ticks, detached.boot_id(), time.time())
            self._store.call_started(self._seq, index, started)

        prefix = self._store.run_prefix(self._seq, index)
        launched = detached.start(argv, cwd, prefix, input, journal)
        done = launched.wait(remaining())
        self._store.call_finished(self._seq, index, dataclasses.asdict(done), launched.recorded)
        return done


def _describe(done: Completed) -> str:
    if done.timed_out:
        return "killed at the plan time limit"
    if done.interrupted:
        return "interrupted (it ended without an exit code); not run again"
    return f"exit code {done.exit_code}"
