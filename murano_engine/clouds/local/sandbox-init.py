"""PID 1 of a local-cloud sandbox: keeps the agent running, reaps orphans, passes signals on.

As a VM's service manager would, it starts the agent again when it dies on
its own (a crash, ``kill -9``): after half a second, longer when it keeps
dying at once. What the dead agent started (a plan's script) runs on; the new
agent finds it in its journal. A server's processes that outlive their
parents (a service started with ``setsid ... &``) are adopted by PID 1, as on
a VM; without a reaper they would stay zombies, and a script waiting for one
to end would wait in vain. A signal to stop (TERM, INT, HUP) goes to the
agent; when the agent then ends, so does this process, and with it the
sandbox.
"""

import os
import signal
import subprocess
import sys
import time

state = {"agent": subprocess.Popen(sys.argv[1:]), "stopping": False}


def stop(number, _frame):
    state["stopping"] = True
    state["agent"].send_signal(number)


for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, stop)
delay, started = 0.5, time.monotonic()
while True:
    try:
        pid, status = os.wait()
    except ChildProcessError:
        sys.exit(0)
    if pid != state["agent"].pid:
        continue
    if state["stopping"]:
        sys.exit(os.waitstatus_to_exitcode(status))
    delay = 0.5 if time.monotonic() - started > 10 else min(delay * 2, 8.0)
    print(f"sandbox init: the agent ended ({os.waitstatus_to_exitcode(status)}); "
          f"starting it again in {delay:g} s", file=sys.stderr, flush=True)
    time.sleep(delay)
    if state["stopping"]:
        sys.exit(0)
    state["agent"], started = subprocess.Popen(sys.argv[1:]), time.monotonic()
