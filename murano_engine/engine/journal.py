"""The deployment journal: every call that leaves the interpreter, recorded durably.

A run of the engine is MuranoPL code plus answers from the outside world (ids,
names, the clock, stacks, agents' results). :class:`Journal` is the
boundary of one run: each outside call goes through it and is appended to a
:class:`JournalStore` before the code goes on. Running the same task again
with the same journal re-executes the code from the start and answers each
call the journal already holds from it, without reaching the outside; where
the journal ends, the run goes on live. So a run killed at any point is
resumed by running it again, and no plan or stack operation that completed is
done twice.

Entries are keyed by where the call is made, not by the global order of
calls: ``<branch>|<kind>|<scope>|<n>``, where ``branch`` names the green
thread (``Parallel``, ``pselect`` and ``psuper`` give each branch a path of
its own, see :func:`murano_engine.dsl.concurrency.branch`), ``kind`` the call,
``scope`` the object it is about (an agent's queue, a stack's name), and ``n``
counts the calls with the same prefix. Code in one branch runs in order, so
the keys come out the same however branches interleave.

Effects with a lasting outside result (a plan sent, a stack pushed) are
recorded twice: their *intent* before they start (a plan's id), their outcome
when they end. An intent without an outcome is carried out again with the
same intent: a plan is re-sent with its id, and the agent answers it from its
own journal.

Every record carries a digest chained to the one before it (:class:`Chain`):
an HMAC keyed with the journal key (:func:`journal_key`, a file kept outside
the state folder) where one is configured. A record edited, moved, removed or
added by hand breaks the chain there, and the journal is refused naming the
line, so a run never replays what it did not record itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import importlib
import json
import logging
import os
import secrets
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from murano_common.files import replace_whole, write_all
from murano_engine.dsl import concurrency
from murano_engine.dsl.boundary import Outside

LOG = logging.getLogger(__name__)

_datasync = getattr(os, "fdatasync", os.fsync)

#: Seconds between two looks at whether a sleeping run was asked to stop.
STOP_POLL = 0.1

#: Exceptions the journal re-raises on replay come from these modules only
#: (a journal is data: it never names arbitrary code to import).
_REPLAYABLE_MODULES = ("murano_engine.",)


class JournalStore(Protocol):
    """Where a run's entries are kept: a file for the command line, a table for the API."""

    def load(self) -> list[dict[str, Any]]:
        """The entries appended so far, oldest first."""

    def append(self, entry: dict[str, Any]) -> None:
        """Add one entry; it is durable when this returns."""

    def close(self) -> None:
        """Release the store (the entries stay)."""


class JournalError(Exception):
    """A journal that cannot be read or trusted (names the file and line)."""


class EmptyJournal(JournalError):
    """A journal with no whole header line (empty, or its header torn by a crash): its
    run recorded nothing, since the header is on disk before any entry."""


#: Hex digits of a record's digest (128 bits).
DIGEST_HEX = 32
#: What every chain starts from (with the store's own seed).
_CHAIN_START = b"murano-engine journal 1\n"


class Chain:
    """The digests of a journal's records, each covering its record and the digest
    before it: an HMAC-SHA256 keyed with ``key``, or a plain SHA-256 without one (which
    catches an edit by hand, not a forger who recomputes the chain)."""

    def __init__(self, key: bytes | None, seed: bytes = b"") -> None:
        self._key = key
        self.last = hashlib.sha256(_CHAIN_START + seed).hexdigest()[:DIGEST_HEX]

    def _next(self, body: bytes) -> str:
        data = self.last.encode("ascii") + body
        if self._key:
            return hmac.new(self._key, data, hashlib.sha256).hexdigest()[:DIGEST_HEX]
        return hashlib.sha256(data).hexdigest()[:DIGEST_HEX]

    def seal(self, body: bytes) -> str:
        """The digest of the record ``body`` that follows the last one."""
        self.last = self._next(body)
        return self.last

    @contextlib.contextmanager
    def tentative(self) -> Iterator[None]:
        """Records sealed in the block are taken back when it fails (they were not
        stored): the chain goes on from the record before them."""
        last = self.last
        try:
            yield
        except BaseException:
            self.last = last
            raise

    def follows(self, body: bytes, digest: str) -> bool:
        """Whether ``digest`` is the one of ``body`` after the last record (then it is
        the last one)."""
        expected = self._next(body)
        if not hmac.compare_digest(expected, digest):
            return False
        self.last = expected
        return True


_KEY_BYTES = 32


def journal_key(path: str | Path | None) -> bytes | None:
    """The key in the file ``path``, made (random, mode 0600) on first use; None
    without a path (digests are then unkeyed)."""
    if not path:
        return None
    path = Path(path).expanduser()
    try:
        if not path.exists():
            _make_key(path)
        if path.stat().st_mode & 0o077:
            raise JournalError(f"{path}: the journal key must be readable by its owner only "
                               f"(chmod 600 {path})")
        key = path.read_bytes().strip()
    except OSError as exc:
        raise JournalError(
            f"{path}: cannot make or read the journal key ({exc.strerror}); set [engine] "
            "journal_key_file (or MURANO_ENGINE_JOURNAL_KEY_FILE) to a file of yours, or "
            "to nothing for unkeyed digests") from None
    if len(key) < _KEY_BYTES:
        raise JournalError(f"{path}: the journal key is shorter than {_KEY_BYTES} bytes "
                           "(remove the file to have a new one made)")
    return key


def _make_key(path: Path) -> None:
    """A new random key at ``path``, unless another process makes one first."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, secrets.token_hex(_KEY_BYTES).encode("ascii") + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temporary, path)  # the first process to make it wins
    except FileExistsError:
        pass
    finally:
        temporary.unlink()


#: Why a record whose digest does not match is refused.
TAMPERED = ("this entry does not follow from the ones before it (its digest does not "
            "match: the journal was edited, reordered or spliced, or written with another "
            "journal key)")


class Cancelled(BaseException):  # noqa: N818 - a stop, not an error MuranoPL may catch
    """The run was asked to stop: raised at its next outside call.

    A BaseException, so MuranoPL's ``Try``/``Catch`` never swallows it.
    """


class RecordingFailed(Cancelled):
    """A step's record (a journal entry, a report) could not be stored: the disk is
    full, the database is away. The run stops there, as when it is cancelled, and is
    resumed later from what was stored; it never goes on with a step unrecorded, which
    a later run would do again (nor may MuranoPL catch it and go on).
    """


#: Calls whose value is most often the one they gave before: each instance of an
#: environment reads its stack's outputs after every push (N instances, N outputs
#: each). A value equal, as JSON, to the last one recorded for the same call and scope
#: is recorded as a reference to that entry (``"same": key``).
REPEATING = frozenset({"stack.output"})


class Journal(Outside):
    """The outside world of one run, recorded in ``store`` (live only when None)."""

    def __init__(self, store: JournalStore | None = None, live: Outside | None = None) -> None:
        super().__init__(live.services if live is not None else None)
        self._live = live if live is not None else Outside()
        self._store = store
        self._begun: dict[str, Any] = {}
        self._ended: dict[str, dict[str, Any]] = {}
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._cancelled = threading.Event()
        #: called before each outside call; it raises (a :class:`Cancelled`) to stop the
        #: run there, e.g. once the run's process may have lost its task to another
        self.fence: Callable[[], None] | None = None
        #: told of each call that is about to run live (``kind``, ``scope``, its intent),
        #: before anything of it is made or recorded: the register of what an
        #: environment made (:class:`murano_engine.clouds.local.registry.Holding`)
        self.announce: Callable[[str, str, Any], None] | None = None
        self.replayed = 0
        self.recorded = 0
        self._touched: dict[str, set[str]] = {"stacks": set(), "queues": set(),
                                              "identities": set()}
        #: the last value recorded of each repeating call and scope: (its key, its JSON)
        self._last: dict[tuple[str, str], tuple[str, bytes]] = {}
        if store is not None:
            for entry in store.load():
                self._note(entry)
                if entry.get("t") == "begin":
                    self._begun[entry["k"]] = entry.get("v")
                    continue
                if "same" in entry:
                    earlier = self._ended.get(str(entry["same"]))
                    if earlier is None or "v" not in earlier:
                        raise JournalError(f"journal entry {entry.get('k')!r} repeats the "
                                           f"value of {entry['same']!r}, which it lacks")
                    entry = {**entry, "v": earlier["v"]}
                self._ended[entry["k"]] = entry
        self.resuming = bool(self._ended or self._begun)

    def touched(self) -> dict[str, set[str]]:
        """The stacks, broker queues and servers' broker identities (by queue) this run
        (and the runs it resumes) reached."""
        return {name: set(items) for name, items in self._touched.items()}

    def _note(self, entry: dict[str, Any]) -> None:
        parts = str(entry.get("k")).split("|")
        if len(parts) < 4:
            return
        kind, scope = parts[1], "|".join(parts[2:-1])
        if kind.startswith("stack."):
            self._touched["stacks"].add(scope)
        elif kind == "broker.identity":
            self._touched["identities"].add(scope)
        elif kind.startswith("agent."):
            self._touched["queues"].add(scope)
            value = entry.get("v")
            if isinstance(value, dict) and value.get("results"):
                self._touched["queues"].add(str(value["results"]))

    # -- cancelling ------------------------------------------------------------------

    def cancel(self) -> None:
        """Stop the run at its next outside call (waits in progress end soon after)."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def check(self) -> None:
        """Raise :class:`Cancelled` once :meth:`cancel` was called (or the fence says so)."""
        if self._cancelled.is_set():
            raise Cancelled("the run was cancelled")
        if self.fence is not None:
            self.fence()

    # -- recording -------------------------------------------------------------------

    def key(self, kind: str, scope: str = "") -> str:
        """The key of the next ``kind`` call about ``scope`` in this branch."""
        prefix = f"{concurrency.branch()}|{kind}|{scope}"
        with self._lock:
            n = self._counts.get(prefix, 0)
            self._counts[prefix] = n + 1
        return f"{prefix}|{n}"

    def value(self, kind: str, scope: str, compute: Callable[[], Any]) -> Any:
        """``compute()``'s value (or error), recorded; on replay the recorded one."""
        self.check()
        key = self.key(kind, scope)
        if key in self._ended:
            return self._replay(key)
        self._announce(kind, scope, None)
        return self._run(key, compute, (kind, scope) if kind in REPEATING else None)

    def effect(self, kind: str, scope: str, intent: Callable[[], Any],
               perform: Callable[[Any], Any]) -> Any:
        """Carry out an effect: ``intent()`` is recorded before ``perform(intent)`` runs,
        its outcome after; an intent recorded by an earlier run is performed again as it
        was (the same plan id), an outcome recorded is returned without performing."""
        self.check()
        key = self.key(kind, scope)
        if key in self._ended:
            return self._replay(key)
        if key in self._begun:
            planned = self._begun[key]
            LOG.info("journal: %s was started by an earlier run; carrying it on", key)
            self._announce(kind, scope, planned)
        else:
            planned = intent()
            self._announce(kind, scope, planned)
            self._append({"k": key, "t": "begin", "v": planned})
        return self._run(key, lambda: perform(planned))

    def _announce(self, kind: str, scope: str, intent: Any) -> None:
        """Tell :attr:`announce` of a call about to run; a failure to take note stops
        the run there, as a step that cannot be recorded does."""
        if self.announce is None:
            return
        try:
            self.announce(kind, scope, intent)
        except Exception as exc:
            raise RecordingFailed(f"what step {kind} {scope} makes could not be noted: "
                                  f"{exc}") from exc

    def _run(self, key: str, compute: Callable[[], Any],
             repeating: tuple[str, str] | None = None) -> Any:
        try:
            result = compute()
        except Cancelled:
            raise
        except Exception as exc:
            if self.cancelled:  # the failure may be the stop itself: nothing is recorded
                raise Cancelled("the run was cancelled") from exc
            if not _replayable(type(exc)):
                raise
            self._append({"k": key, "t": "end", "e": _error_record(exc)})
            raise
        if repeating is not None and self._store is not None:
            encoded = json.dumps(result, separators=(",", ":"), default=str).encode("utf-8")
            last = self._last.get(repeating)
            if last is not None and last[1] == encoded:
                self._append({"k": key, "t": "end", "same": last[0]})
                return result
            self._last[repeating] = (key, encoded)
        self._append({"k": key, "t": "end", "v": result})
        return result

    def _replay(self, key: str) -> Any:
        entry = self._ended[key]
        self.replayed += 1
        if "e" in entry:
            raise _rebuild_error(entry["e"])
        return entry.get("v")

    def _append(self, entry: dict[str, Any]) -> None:
        self._note(entry)
        if self._store is not None:
            try:
                self._store.append(entry)
            except Cancelled:
                raise
            except Exception as exc:
                raise RecordingFailed(f"the journal could not record step {entry['k']}: "
                                      f"{exc}") from exc
            self.recorded += 1

    # -- the Outside interface, recorded ----------------------------------------------

    def now(self) -> float:
        return self.value("now", "", self._live.now)

    def monotonic(self) -> float:
        return self._live.monotonic()  # measures this process's waits: never replayed

    def sleep(self, seconds: float) -> None:
        self.value("sleep", "", lambda: self._sleep(seconds))

    def _sleep(self, seconds: float) -> None:
        """Sleep in short slices, ending with :class:`Cancelled` soon after :meth:`cancel`."""
        end = self._live.monotonic() + seconds
        while (left := end - self._live.monotonic()) > 0:
            self.check()
            self._live.sleep(min(left, STOP_POLL))
        self.check()

    def new_id(self) -> str:
        return self.value("id", "", self._live.new_id)

    def random_name(self) -> str:
        return self.value("name", "", self._live.random_name)

    def random_string(self, length: int, alphabet: str) -> str:
        return self.value("random", "", lambda: self._live.random_string(length, alphabet))

    def service(self, name: str) -> Any:
        return self._live.service(name)

    def stoppable(self) -> Outside:
        """A live boundary for the services' own waits (stack polling ...) that ends
        them with :class:`Cancelled` soon after :meth:`cancel`."""
        return _Stoppable(self)


class _Stoppable(Outside):
    def __init__(self, journal: Journal) -> None:
        super().__init__()
        self._journal = journal

    def sleep(self, seconds: float) -> None:
        self._journal._sleep(seconds)  # live, not recorded: the services' own waits


def _replayable(cls: type) -> bool:
    return cls.__module__.startswith(_REPLAYABLE_MODULES)


def _error_record(exc: Exception) -> dict[str, Any]:
    cls = type(exc)
    attrs = {}
    for name, value in vars(exc).items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            continue
        attrs[name] = value
    return {"type": f"{cls.__module__}:{cls.__qualname__}", "args": _plain_args(exc),
            "attrs": attrs}


def _plain_args(exc: Exception) -> list[Any]:
    try:
        return json.loads(json.dumps(list(exc.args)))
    except (TypeError, ValueError):
        return [str(exc)]


def _rebuild_error(record: dict[str, Any]) -> Exception:
    """The exception an entry recorded, of the same class (so catches match)."""
    module_name, _, qualname = str(record.get("type", "")).partition(":")
    cls: Any = None
    if f"{module_name}.".startswith(_REPLAYABLE_MODULES):
        try:
            cls = importlib.import_module(module_name)
            for part in qualname.split("."):
                cls = getattr(cls, part)
        except (ImportError, AttributeError):
            cls = None
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        return JournalError(f"a recorded error of an unknown kind: {record.get('type')}: "
                            f"{record.get('args')}")
    exc = cls.__new__(cls)
    Exception.__init__(exc, *record.get("args") or [])
    for name, value in (record.get("attrs") or {}).items():
        setattr(exc, name, value)
    return exc


class FileJournal:
    """A journal file: a header line (what the run is) and one JSON line per entry,
    each line starting with its digest (``{"d":"<digest>",...}``, see :class:`Chain`).

    Each append is written and fdatasync'ed before it returns: one sync at a time, in
    a real thread while the other green threads go on, covering every line written
    before it began (appends that waited for one sync are all covered by the next). A
    line torn by a crash can only be the last one; it is dropped (the call it recorded
    is done again, as after any crash before its end was recorded). Any other line that
    does not follow from the ones before it makes :meth:`open` fail.
    """

    def __init__(self, path: Path, header: dict[str, Any], entries: list[dict[str, Any]],
                 fd: int, chain: Chain) -> None:
        self.path = path
        self.header = header
        self._entries = entries
        self._fd = fd
        self._chain = chain
        self._lock = threading.Lock()  # lines go to the file in the chain's order
        self._syncs = concurrency.OneAtATime()
        self._written = self._synced = 0  # lines appended, lines known to be on disk

    @classmethod
    def create(cls, path: str | Path, header: dict[str, Any],
               key: bytes | None = None) -> FileJournal:
        """A new journal (replacing any file there) starting with ``header``, its
        digests keyed with ``key``."""
        path = Path(path)
        chain = Chain(key)
        replace_whole(path, _sealed({"header": header, "nonce": secrets.token_hex(8)}, chain),
                      path.with_name(path.name + ".tmp"))
        _sync_folder(path.parent)
        return cls(path, header, [], os.open(path, os.O_WRONLY | os.O_APPEND), chain)

    @classmethod
    def open(cls, path: str | Path, key: bytes | None = None) -> FileJournal:
        """An existing journal, to replay and go on appending to; :class:`JournalError`
        naming the line when it was not written as it is with ``key``."""
        path = Path(path)
        raw = path.read_bytes()
        *lines, tail = raw.split(b"\n")  # a tail with no newline is a torn write
        chain = Chain(key)
        header: dict[str, Any] | None = None
        entries: list[dict[str, Any]] = []
        good = 0
        for number, line in enumerate(lines, 1):
            if not line.strip():
                good += len(line) + 1
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                if number == len(lines) and not tail:  # the last line, torn by a crash
                    break
                raise JournalError(f"{path}:{number}: not a journal entry ({exc})") from None
            try:
                digest, body = _unsealed(line, record)
            except ValueError as exc:
                raise JournalError(f"{path}:{number}: not a journal entry ({exc})") from None
            if not chain.follows(body, digest):
                raise JournalError(f"{path}:{number}: {TAMPERED}")
            if header is None:
                if not isinstance(record.get("header"), dict):
                    raise JournalError(f"{path}:{number}: the journal has no header line")
                header = record["header"]
            elif "header" in record:
                raise JournalError(f"{path}:{number}: a second header line")
            else:
                entries.append(record)
            good += len(line) + 1
        if header is None:
            raise EmptyJournal(f"{path}: the journal holds no whole header line")
        if good < len(raw):
            fd = os.open(path, os.O_WRONLY)
            os.ftruncate(fd, good)  # drop a torn tail before appending
            os.close(fd)
        return cls(path, header, entries, os.open(path, os.O_WRONLY | os.O_APPEND), chain)

    def load(self) -> list[dict[str, Any]]:
        return list(self._entries)

    def append(self, entry: dict[str, Any]) -> None:
        """Write and sync ``entry``; OSError (the disk is full) leaves the file and the
        chain as they were before it."""
        with self._lock, self._chain.tentative():
            line = _sealed(entry, self._chain)
            size = os.fstat(self._fd).st_size
            try:
                write_all(self._fd, line, self.path)
            except OSError:  # the disk filled up in the middle of the line
                os.ftruncate(self._fd, size)
                raise
            self._written += 1
            mine = self._written
        with self._syncs:
            if self._synced < mine:  # else a sync that began after this line covered it
                written = self._written
                self._syncs.call(_datasync, self._fd)
                self._synced = written

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def remove(self) -> None:
        """Close and delete the file (the run it recorded has ended)."""
        self.close()
        self.path.unlink(missing_ok=True)
        _sync_folder(self.path.parent)


_DIGEST_FIELD = b'{"d":"'
_BODY_START = len(_DIGEST_FIELD) + DIGEST_HEX + 2  # past the digest and its '",'


def _sealed(record: dict[str, Any], chain: Chain) -> bytes:
    """``record``'s line: its digest first, then its fields as JSON."""
    body = json.dumps(record, separators=(",", ":"), default=str).encode("utf-8")
    digest = chain.seal(body)
    return _DIGEST_FIELD + digest.encode("ascii") + b'",' + body[1:] + b"\n"


def _unsealed(line: bytes, record: Any) -> tuple[str, bytes]:
    """The digest of a line holding ``record`` (which loses it) and the JSON it covers."""
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    if not line.startswith(_DIGEST_FIELD) or line[_BODY_START - 2:_BODY_START] != b'",':
        raise ValueError("no digest: written by hand or by an engine older than digests")
    record.pop("d", None)
    digest = line[len(_DIGEST_FIELD):_BODY_START - 2].decode("ascii", "replace")
    return digest, b"{" + line[_BODY_START:]


def _sync_folder(folder: Path) -> None:
    if hasattr(os, "O_DIRECTORY"):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
