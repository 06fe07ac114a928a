"""Parsed class files and manifests kept between processes, keyed by their content.

Reading a package's YAML (PyYAML's import, libyaml, the checks of
:mod:`murano_engine.dsl.yaml_loader`, yaql parsing every candidate scalar)
is most of what loading a class costs; the result depends only on the file's
bytes, the name it is shown under and the code that reads it. So each result
is pickled under the user's cache folder (``~/.cache/murano-engine/documents``
or ``$XDG_CACHE_HOME``) together with all of those, in an entry named by their
CRC-32 and length; an entry is used only when what it holds equals them byte
for byte, so a changed file, a moved one, another yaql or a change to the
reading code each parse afresh (a checksum, not a cryptographic hash: the
comparison, not the name, decides, and neither ``hashlib`` nor hashing costs
start-up time). Expressions are kept with their yaql syntax trees, so a warm
start needs no yaql parser (:class:`~murano_engine.dsl.expressions.Expression`).

An entry is written to a temporary file and renamed into place, so processes
writing the same entry at once leave one whole file; one that cannot be read
(damaged, or from an incompatible Python) is parsed again and rewritten, and
a cache folder that cannot be written only costs the parse. Files that do not
parse are never cached: their error is raised each time. Entries of files seen
once (an upload checked in a temporary folder) do not pile up: a write whose
key starts with ``PRUNE_PREFIX`` (one in 256) removes the entries written more
than MAX_AGE before it (one still in use is then parsed and written again).
The interpreter reads no clock (tests/dsl/test_boundary.py): an entry's age is
measured against the file system's time of that write.
"""

from __future__ import annotations

import _pickle  # the C pickler: pickle.py, its Python fallback, costs start-up time
import functools
import itertools
import os
import sys
import zlib
from collections.abc import Callable

from murano_engine.dsl.files import read_bytes

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

#: the sources whose code decides what a file parses to
_READERS = ("yaml_loader.py", "expressions.py", "document_cache.py", "errors.py")
#: the pickle protocol of entries (and of the expression trees inside them)
PICKLE_PROTOCOL = 5
#: entries older than this (seconds) are removed when the cache is pruned
MAX_AGE = 7 * 24 * 3600
#: a write whose key starts so prunes the cache
PRUNE_PREFIX = "00"
_writes = itertools.count()


def cache_dir() -> str:
    """Where entries live (looked up each time: tests and the API set XDG_CACHE_HOME)."""
    return _cache_dir(os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME"))


@functools.lru_cache(maxsize=8)
def _cache_dir(xdg_cache_home: str | None, home: str | None) -> str:
    base = xdg_cache_home or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "murano-engine", "documents")


@functools.cache
def _salt() -> bytes:
    """What every entry is checked against besides the file: checksums of the reading
    code and of the Python and yaql it parses with."""
    import yaql
    here = os.path.dirname(__file__)
    material = f"{sys.version_info[:2]} yaql {yaql.__version__}".encode()
    for name in _READERS:
        with open(os.path.join(here, name), "rb") as source:
            material += source.read()
    return f"{zlib.crc32(material):08x}{zlib.adler32(material):08x}{len(material)}".encode()


def cached(kind: str, text: bytes | str, filename: str, parse: Callable[[], Any]) -> Any:
    """What ``parse()`` makes of ``text`` (shown as ``filename``), from the cache when
    an earlier process parsed the same; ``kind`` names the parse (class file, manifest)."""
    data = text.encode() if isinstance(text, str) else text
    source = (_salt(), f"{kind}\0{filename}".encode(), data)
    key = f"{zlib.crc32(data, zlib.crc32(source[1], zlib.crc32(source[0]))):08x}{len(data):x}"
    path = os.path.join(cache_dir(), key[:2], f"{key}.pickle")
    try:
        *kept, result = _pickle.loads(read_bytes(path))
        if tuple(kept) == source:
            return result
    except Exception:  # noqa: BLE001,S110 - no entry, or a damaged one: parsed, (re)written
        pass
    result = parse()
    _store(path, (*source, result))
    if key.startswith(PRUNE_PREFIX):
        try:
            prune(os.stat(path).st_mtime - MAX_AGE)
        except OSError:
            pass  # not written: nothing to measure against
    return result


class Deferred:
    """A part of a document that an entry keeps pickled apart, read back when first
    asked for: loading a class reads none of its methods' bodies, a run only those
    it calls, so an entry read back costs no more for the bodies never run."""

    __slots__ = ("_value", "_blob")

    def __init__(self, value: Any = None, blob: bytes | None = None) -> None:
        self._value = value
        self._blob = blob

    def get(self) -> Any:
        """The part itself."""
        blob = self._blob
        if blob is None:
            return self._value
        value = self._value = _pickle.loads(blob)
        self._blob = None  # after the value: a reader that finds no blob finds it
        return value

    def __reduce__(self) -> tuple[Any, tuple[None, bytes]]:
        blob = self._blob
        if blob is None:
            blob = _pickle.dumps(self._value, protocol=PICKLE_PROTOCOL)
        return Deferred, (None, blob)


def prune(written_before: float) -> int:
    """Remove the entries written before ``written_before`` (seconds since the epoch, as
    a file's modification time); how many."""
    removed = 0
    folder = cache_dir()
    try:
        shards = [os.path.join(folder, name) for name in os.listdir(folder)]
    except OSError:
        return 0
    for shard in shards:
        try:
            entries = [os.path.join(shard, name) for name in os.listdir(shard)]
        except OSError:
            continue
        for entry in entries:
            try:
                if os.stat(entry).st_mtime < written_before:
                    os.unlink(entry)
                    removed += 1
            except OSError:
                pass  # gone already, or not ours to remove
    return removed


def _store(path: str, result: Any) -> None:
    try:
        blob = _pickle.dumps(result, protocol=PICKLE_PROTOCOL)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # a name no other writer uses (O_EXCL refuses one that exists), without tempfile,
        # whose imports (random, shutil) cost a cold start ~11M instructions
        temporary = f"{path}.{os.getpid()}.{next(_writes)}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except (OSError, _pickle.PicklingError, RecursionError, TypeError):
        return  # an unwritable cache, or a document that cannot be kept: parsed each time
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(blob)
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
