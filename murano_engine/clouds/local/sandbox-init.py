"""PID 1 of a local-cloud sandbox: keeps the agent running, reaps orphans, passes signals on.

``serve(start)`` runs in the sandbox's first process once it is set up
(``sandbox-enter.py``); ``start()`` starts an agent and returns its pid.

As a VM's service manager would, it starts the agent again when it dies on
its own (a crash, ``kill -9``): after half a second, then a second. An agent
that exits by itself within QUICK seconds of its start GIVE_UP times in a row
cannot start (its config, its code or its Python is broken): this process then says
so and ends with status 70, and with it the sandbox; the engine marks the
server ERROR. What the dead agent started (a plan's script) runs on; the new
agent finds it in its journal. A server's processes that outlive their
parents (a service started with ``setsid ... &``) are adopted by PID 1, as on
a VM; without a reaper they would stay zombies, and a script waiting for one
to end would wait in vain. A signal to stop (TERM, INT, HUP) goes to the
agent; when the agent then ends, so does this process, and with it the
sandbox.
"""

import os
import signal
import sys
import time

QUICK, GIVE_UP = 5.0, 2


def serve(start):
    state = {"agent": start(), "stopping": False}

    def stop(number, _frame):
        state["stopping"] = True
        try:
            os.kill(state["agent"], number)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    started, quick_ends, ever_ran = time.monotonic(), 0, False
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            sys.exit(0)
        if pid != state["agent"]:
            continue
        if state["stopping"]:
            sys.exit(os.waitstatus_to_exitcode(status))
        code = os.waitstatus_to_exitcode(status)
        # An agent killed by a signal (a crash, kill -9) ran; one that exits soon by
        # itself (its config, its code or its Python is broken) did not get going.
        quick = code >= 0 and time.monotonic() - started < QUICK
        quick_ends = quick_ends + 1 if quick else 0
        ever_ran = ever_ran or not quick
        if quick_ends >= GIVE_UP:
            _say(f"sandbox init: the agent ended ({code}) {quick_ends} times in a row "
                 f"within {QUICK:g} s of starting; it "
                 + ("cannot be restarted" if ever_ran else "could not start"))
            sys.exit(70)
        delay = 0.5 * 2 ** quick_ends
        _say(f"sandbox init: the agent ended ({code}); starting it again in {delay:g} s")
        time.sleep(delay)
        if state["stopping"]:
            sys.exit(0)
        state["agent"], started = start(), time.monotonic()


def _say(line):
    """Write a line to the sandbox's output; lost, not fatal, once the host-side process
    that keeps it is gone (the pipe is broken)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:
        pass
