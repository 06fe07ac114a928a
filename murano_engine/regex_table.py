"""Compiled regular expressions kept beside the code, as Python keeps bytecode.

Python compiles a regular expression with Python code (``re._parser`` and
``re._compiler``); the matching engine's code it makes depends only on the
pattern, its flags and the Python build. The standard library, PyYAML and yaql
compile their patterns as they are imported or first used: some 25 in a
``murano-engine run`` whose classes are cached (10M instructions of 162M), 75 in
one that parses them (39M of 277M). This table keeps that code for the patterns
the engine's commands compile, in ``__pycache__`` beside this file, named by a
checksum of the Python build; :func:`prime` (run when ``murano_engine`` is
imported) puts pattern objects made from it by ``_sre.compile`` (C code) into
``re``'s own cache, where each ``re.compile`` of the same pattern and flags then
finds its result.

``python -m murano_engine.cli.regex_table`` writes the table (``make install``
runs it): what a fresh Python compiles while it validates the core library and
runs a method, both with an empty cache. A pattern missing from the table
compiles as usual; a table of another build has another name; one that cannot
be read is ignored. What it holds is ``re``'s own output, and ``_sre.compile``
checks the code it is given (a test compares each entry with a fresh compile:
patterns compare equal only with equal code). The folder is the one Python
writes this package's bytecode to, and is trusted as that is.
"""

from __future__ import annotations

import _pickle
import os
import sys
import zlib

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

    #: ``_sre.compile``'s arguments by ``re``'s cache key (type, pattern, flags)
    Table = dict[tuple[type, Any, int], tuple[Any, ...]]


def table_path() -> str:
    """Where this Python build's table is (whether or not it exists)."""
    import _sre
    build = f"{sys.version}|{_sre.MAGIC}|{_sre.CODESIZE}|{_sre.MAXREPEAT}|{_sre.MAXGROUPS}"
    return os.path.join(os.path.dirname(__file__), "__pycache__",
                        f"regex-table.{zlib.crc32(build.encode()):08x}.pickle")


def prime(path: str | None = None) -> int:
    """Put the patterns of the table at ``path`` (this build's by default) into ``re``'s
    cache; how many (0 without a table)."""
    import re
    cache = getattr(re, "_cache", None)
    if not isinstance(cache, dict):
        return 0
    try:
        with open(path or table_path(), "rb") as file:
            table: Table = _pickle.loads(file.read())
        import _sre
        for key, arguments in table.items():
            if key not in cache:
                cache[key] = _sre.compile(*arguments)
    except Exception:  # noqa: BLE001 - no table, or an unreadable one: patterns compile as usual
        return 0
    return len(table)


def record(work: Any) -> Table:
    """The table of what ``work()`` compiles: ``_sre.compile``'s arguments for each pattern
    ``re``'s cache holds afterwards."""
    import re
    import re._compiler as compiler
    made: dict[int, tuple[Any, ...]] = {}
    real = compiler._sre

    class Recorder:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        @staticmethod
        def compile(*arguments: Any) -> Any:
            pattern = real.compile(*arguments)
            source, flags, code, *groups = arguments
            # the code's opcodes are re's named int constants, which do not pickle
            made[id(pattern)] = (source, int(flags), [int(word) for word in code], *groups)
            return pattern

    re.purge()
    compiler._sre = Recorder()
    try:
        work()
    finally:
        compiler._sre = real
    return {key: made[id(pattern)] for key, pattern in re._cache.items()
            if id(pattern) in made}


def write(table: Table, path: str) -> None:
    """Write ``table`` to ``path`` whole (a temporary file renamed into place)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = _pickle.dumps(table, protocol=5)
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "wb") as file:
        file.write(data)
    os.replace(temporary, path)
