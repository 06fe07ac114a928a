"""A command's process: what lives as long as it, and its quick end."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import NoReturn


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` when a command is done, skipping Python's teardown.

    Freeing every object a command made (classes, the model, yaql's tables) one by
    one is about a twelfth of a short command's CPU, and an exiting process needs none
    of it. The atexit handlers run (logging's flush among them) and the standard streams
    are flushed first; the engine writes its files through ``with`` blocks and the
    journal straight to the descriptor, so nothing is left in a buffer. With threads
    still running, the process exits as Python does (it waits for them).
    """
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        sys.exit(code)
    import atexit
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)  # a closed or broken stream: as Python would report it
    os._exit(code)



@contextmanager
def long_lived() -> Iterator[None]:
    """For what is made inside to live as long as the process (modules, packages, their
    classes): the cyclic garbage collector does not walk it while it is made (about a
    twentieth of a start-up, a sixteenth of loading a package set's classes) nor again
    and again afterwards (about a sixth of the time of object-heavy MuranoPL)."""
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
