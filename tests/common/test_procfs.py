"""murano_common.procfs: a process that ends while it is being looked at."""

from __future__ import annotations

import os
import subprocess

from murano_common import procfs


def test_a_process_that_ends_between_the_open_and_the_read_is_not_running(monkeypatch):
    # Removing 200 servers at once met this: /proc/PID/stat opened, the process ended
    # and was collected, and the read failed with ESRCH (the removal was taken as failed).
    child = subprocess.Popen(["sleep", "60"])
    assert procfs.running(child.pid)
    real_open = os.open

    def open_then_end(path, *args, **kwargs):
        fd = real_open(path, *args, **kwargs)
        if path == f"/proc/{child.pid}/stat":
            child.kill()
            child.wait()
        return fd

    monkeypatch.setattr(os, "open", open_then_end)
    assert procfs.stat(child.pid) is None
    assert not procfs.running(child.pid)
