"""Where a command's wall time goes: ``python benchmarks/wall_profile.py OUT -- ARGS``
runs ``murano-engine ARGS`` with a real thread sampling its main thread's stack every
5 ms, and writes to OUT the functions seen most (inclusive, and innermost).

Under eventlet every green thread runs on the main thread, so a sample is the green
thread running then, or the hub waiting (``epolls.py ... do_poll``: for agents, the
broker, a sleep); a blocking system call (an unmount) shows as itself. cProfile
cannot tell these apart: it charges a green thread's switched-out time to its frames.
"""

from __future__ import annotations

import collections
import sys
import threading
import time
from pathlib import Path

INTERVAL = 0.005
REPO = str(Path(__file__).resolve().parent.parent) + "/"


def _name(code: object) -> str:
    path = code.co_filename  # type: ignore[attr-defined]
    path = path.rsplit("site-packages/", 1)[-1].replace(REPO, "")
    return f"{path}:{code.co_firstlineno}({code.co_name})"  # type: ignore[attr-defined]


def main() -> int:
    out, args = sys.argv[1], sys.argv[3:]
    main_thread = threading.get_ident()
    inclusive: collections.Counter[str] = collections.Counter()
    innermost: collections.Counter[str] = collections.Counter()
    samples = 0
    stopping = threading.Event()

    def sample() -> None:
        nonlocal samples
        while not stopping.wait(INTERVAL):
            frame = sys._current_frames().get(main_thread)
            if frame is None:
                continue
            samples += 1
            innermost[_name(frame.f_code)] += 1
            seen: set[str] = set()
            while frame is not None:
                seen.add(_name(frame.f_code))
                frame = frame.f_back
            inclusive.update(seen)

    sampler = threading.Thread(target=sample, daemon=True)  # real: eventlet is not in yet
    sampler.start()
    sys.argv = ["murano-engine", *args]
    from murano_engine.cli.main import main as engine_main
    started = time.perf_counter()
    try:
        code = engine_main()
    finally:
        stopping.set()
        sampler.join()
        with open(out, "w", encoding="utf-8") as file:
            file.write(f"wall {time.perf_counter() - started:.2f} s, {samples} samples of "
                       f"{INTERVAL * 1000:g} ms\n== inclusive\n")
            file.writelines(f"{count:6d} {name}\n" for name, count in inclusive.most_common(80))
            file.write("== innermost\n")
            file.writelines(f"{count:6d} {name}\n" for name, count in innermost.most_common(40))
    return code or 0


if __name__ == "__main__":
    raise SystemExit(main())
