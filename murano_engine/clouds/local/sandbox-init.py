"""PID 1 of a local-cloud sandbox: runs the agent, reaps every orphan, passes signals on.

A server's processes that outlive their parents (a service started with
``setsid ... &``) are adopted by PID 1, as on a VM; without a reaper they
would stay zombies, and a script waiting for one to end would wait in vain.
When the agent ends, so does this process, and with it the sandbox.
"""

import os
import signal
import subprocess
import sys

agent = subprocess.Popen(sys.argv[1:])
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, lambda number, _frame: agent.send_signal(number))
while True:
    try:
        pid, status = os.wait()
    except ChildProcessError:
        sys.exit(0)
    if pid == agent.pid:
        sys.exit(os.waitstatus_to_exitcode(status))
