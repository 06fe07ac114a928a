"""The local cloud's register of environments: what each one made, by its id.

``<state_dir>/environments/<digest of the id>.json`` holds, for every environment
the engine's commands deployed from this host, the state file that holds it and
its journal, and every stack, broker queue (agents' and results) and server broker
identity its runs reached, each written *before* it is made (the journal asks
:meth:`Holding.announce` first), and the environment's signing key. A record
goes only once all of that is gone (a destroy that ended well). It is the ground
truth, as Heat's stack list is for a cloud: a state file or journal that is
lost, torn or distrusted cannot orphan what it named, since
``murano-engine destroy --environment ID`` removes what the record names.

``<digest>.lock`` is the environment's lock: an ``flock`` held by the command that
acts on it for its whole life (its pid inside), whatever state file it was given,
so a second command on the same environment is refused naming that pid; a
killed holder releases it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from murano_common.files import lock_holder, replace_whole
from murano_engine.dsl import concurrency

#: what a record lists that a removal deletes
MADE = ("stacks", "queues", "identities")
#: the journal's kinds of calls that make something (see :meth:`Holding.announce`)
_AGENT_PREFIX = "agent."


class EnvironmentBusy(Exception):
    """Another process holds the environment."""

    def __init__(self, environment_id: str, pid: str) -> None:
        super().__init__(
            f"environment {environment_id} is in use by another murano-engine command "
            f"(pid {pid}); wait for it to end, or stop it (Ctrl-C there, or kill -INT "
            f"{pid}) and run this command again")
        self.pid = pid


def _digest(environment_id: str) -> str:
    return hashlib.sha256(environment_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Registry:
    """The records in ``folder`` (``<[local_cloud] state_dir>/environments``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def from_config(cls, config: Mapping[str, Mapping[str, Any]]) -> Registry:
        return cls(Path(str(config["local_cloud"]["state_dir"])).expanduser()
                   / "environments")

    def record_path(self, environment_id: str) -> Path:
        return self.folder / f"{_digest(environment_id)}.json"

    def lock_path(self, environment_id: str) -> Path:
        return self.folder / f"{_digest(environment_id)}.lock"

    def read(self, environment_id: str) -> dict[str, Any] | None:
        """The environment's record (None when it has none). A note of an earlier version
        (``<digest>``: the holding state file's path) reads as a record naming nothing
        made."""
        try:
            found = json.loads(self.record_path(environment_id).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return self._legacy(environment_id)
        except (OSError, ValueError):
            return None
        return found if isinstance(found, dict) and found.get("id") == environment_id \
            else None

    def _legacy(self, environment_id: str) -> dict[str, Any] | None:
        try:
            held = (self.folder / _digest(environment_id)).read_text(encoding="utf-8").strip()
        except (OSError, ValueError):
            return None
        return new_record(environment_id, Path(held)) if held else None

    def records(self) -> list[dict[str, Any]]:
        """Every record, by environment id."""
        found = []
        for path in sorted(self.folder.glob("*.json")) if self.folder.is_dir() else ():
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(record, dict) and isinstance(record.get("id"), str):
                found.append(record)
        return sorted(found, key=lambda r: r["id"])

    def held_by(self, state_path: Path) -> list[dict[str, Any]]:
        """The records whose state file is ``state_path``."""
        wanted = str(state_path.resolve())
        return [r for r in self.records() if r.get("state_file") == wanted]

    def write(self, record: Mapping[str, Any]) -> None:
        """Write ``record`` whole and durably (aside, synced, then renamed)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.record_path(str(record["id"]))
        data = json.dumps(record, sort_keys=True, separators=(",", ":")).encode("utf-8")
        replace_whole(path, data, path.with_name(f".{path.name}.{os.getpid()}.tmp"))
        (self.folder / _digest(str(record["id"]))).unlink(missing_ok=True)  # a legacy note

    def remove(self, environment_id: str) -> None:
        """Forget the environment (everything it made is gone)."""
        self.record_path(environment_id).unlink(missing_ok=True)
        (self.folder / _digest(environment_id)).unlink(missing_ok=True)

    @contextlib.contextmanager
    def locked(self, environment_id: str) -> Iterator[None]:
        """Hold the environment for this process; :class:`EnvironmentBusy` when another
        one does. Taken again by its holder, it is held still."""
        if environment_id in _HELD.get(self.folder, set()):
            yield
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path(environment_id), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = lock_holder(fd)
            os.close(fd)
            raise EnvironmentBusy(environment_id, pid) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        _HELD.setdefault(self.folder, set()).add(environment_id)
        try:
            yield
        finally:
            _HELD[self.folder].discard(environment_id)
            os.ftruncate(fd, 0)
            os.close(fd)  # the file stays: removing it would race the next holder

    def busy(self, environment_id: str) -> str | None:
        """The pid of the process that holds the environment now (None: none does)."""
        try:
            fd = os.open(self.lock_path(environment_id), os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return lock_holder(fd)
        finally:
            os.close(fd)
        return None


#: the environments this process holds, by registry folder
_HELD: dict[Path, set[str]] = {}


#: the holding of the environment this process's command acts on (the journal's
#: :attr:`~murano_engine.engine.journal.Journal.announce` goes to it)
CURRENT: dict[str, Holding] = {}


def announcer() -> Callable[[str, str, Any], None] | None:
    """What the running command's journal tells of each call about to run (None when
    the command holds no environment)."""
    holding = CURRENT.get("holding")
    return holding.announce if holding is not None else None


def new_record(environment_id: str, state_path: Path, name: str = "") -> dict[str, Any]:
    """A record of an environment held by ``state_path`` that made nothing yet."""
    state = str(state_path.resolve())
    return {"id": environment_id, "name": name, "state_file": state,
            "journal": state + ".journal", "stacks": [], "queues": [], "identities": [],
            "keys": [], "last": None}


def names_made(record: Mapping[str, Any]) -> bool:
    """Whether the record names anything made (a stack, a queue, a broker identity)."""
    return any(record.get(kind) for kind in MADE)


class Holding:
    """One command's hold of an environment's record: :meth:`announce` adds what the
    run is about to make, written before the journal lets it be made."""

    def __init__(self, registry: Registry, record: dict[str, Any]) -> None:
        self.registry = registry
        self.record = record
        self._known = {kind: set(record.get(kind) or ()) for kind in MADE}
        #: one write at a time, off the hub; the changes made and those written, counted
        self._writing = concurrency.OneAtATime()
        self._tickets = itertools.count(1)  # next() is atomic: real threads may add too
        self._changes = self._written = 0

    def announce(self, kind: str, scope: str, value: Any = None) -> None:
        """The journal's call ``kind`` about ``scope`` is about to run: record what it
        makes first (a stack pushed, a queue or broker identity of an agent, a results
        queue). Cheap for every other call."""
        if kind == "stack.push":
            self._add([("stacks", scope)])
        elif kind == "broker.identity":
            self._add([("identities", scope), ("queues", scope)])
        elif kind.startswith(_AGENT_PREFIX):
            results = value.get("results") if isinstance(value, dict) else None
            self._add([("queues", scope)] + ([("queues", str(results))] if results else []))

    def _add(self, names: list[tuple[str, str]]) -> None:
        """Add ``(kind, name)`` pairs; back once a write holding them is on disk."""
        new = [(kind, name) for kind, name in names if name not in self._known[kind]]
        if not new:
            return
        for kind, name in new:
            self._known[kind].add(name)
        self._save()

    def _save(self) -> None:
        """Write the record as it is now, or wait for a write that began after this
        change: the servers of an environment announce themselves side by side, and
        a write started after several changes covers them all (one sync, not one each)."""
        mine = next(self._tickets)  # taken after the change (so a write counting it has it)
        self._changes = max(self._changes, mine)  # a race leaves it lower: one more write
        with self._writing:
            if self._written >= mine:
                return
            changes = self._changes
            for kind in MADE:
                self.record[kind] = sorted(self._known[kind])
            self._writing.call(self.registry.write, dict(self.record))
            self._written = changes

    def add_made(self, made: Mapping[str, Any]) -> None:
        """Add what a state file or journal names as made (an earlier version's run)."""
        self._add([(kind, str(name)) for kind in MADE for name in made.get(kind) or ()])

    def note(self, **fields: Any) -> None:
        """Set ``fields`` of the record and write it."""
        self.record.update(fields)
        self._save()


@dataclass
class ServerStatus:
    """A server of an environment's stack as the local cloud has it."""

    stack: str
    name: str
    id: str
    status: str


def servers_of(state_dir: Path, stacks: list[str]) -> list[ServerStatus]:
    """The servers ``stacks`` hold in the local cloud at ``state_dir`` (ERROR for one
    whose guest is dead)."""
    found = []
    records = state_dir / "servers-records"
    for stack in stacks:
        folder = state_dir / "stacks" / stack / "resources"
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
            try:
                resource = json.loads(path.read_text(encoding="utf-8")).get("record") or {}
            except (OSError, ValueError, AttributeError):
                continue
            if resource.get("type") != "OS::Nova::Server" or not resource.get("id"):
                continue
            server_id = str(resource["id"])
            status = "ERROR" if (records / f"{server_id}.error").is_file() else \
                str(resource.get("status") or "?")
            name = str((resource.get("data") or {}).get("name")
                       or (resource.get("properties") or {}).get("name") or server_id)
            found.append(ServerStatus(stack, name, server_id, status))
    return found
