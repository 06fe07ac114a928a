"""Ctrl-C (or SIGTERM) before a command's run begins is kept, not lost.

From the moment the command line has parsed its arguments until the run's own
handler takes over (:func:`murano_engine.cli.deploy.stop_on_signals`), a stop is
only noted: Python's KeyboardInterrupt, raised wherever the process was, was lost
in eventlet's patching of the standard library (the deploy then ran to its end)
or ended the process with a traceback from an import. The run asks :func:`requested`
and stops at its first step, with the usual message; a second Ctrl-C ends the
process at once, as it does during the run.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

#: the signals noted so far, in order
_received: list[int] = []
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: the commands that keep a journal: a stop before their run begins is kept for it
JOURNALED = ("deploy", "destroy", "action")


def _note(signum: int, _frame: FrameType | None) -> None:
    if _received:
        os._exit(128 + signum)
    _received.append(signum)
    try:
        print("\nstopping: the command stops before its first step (press Ctrl-C again "
              "to quit at once)", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def keep_stops() -> None:
    """Note Ctrl-C and SIGTERM from now on instead of raising KeyboardInterrupt."""
    try:
        for sig in STOP_SIGNALS:
            signal.signal(sig, _note)
    except ValueError:  # not the main thread (a test calling main()): not ours to take
        pass


def requested() -> bool:
    """Whether a stop was asked for before the run's own handler took over."""
    return bool(_received)


def keep_stops_of_a_command(argv: list[str] | None = None) -> None:
    """:func:`keep_stops` when this process is ``murano-engine`` (or ``python -m``, which
    names the module only once its package is imported) running a command of
    :data:`JOURNALED`: called first thing as the engine's package is imported."""
    argv = sys.argv if argv is None else argv
    if not argv or not (os.path.basename(argv[0]) == "murano-engine" or argv[0] == "-m"):
        return
    words = [word for word in argv[1:] if not word.startswith("-")]
    if words and words[0] in JOURNALED:
        keep_stops()
