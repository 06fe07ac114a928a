"""A local stack's state and its files under ``<state>/stacks/<name>/``.

Every file is replaced atomically (written aside, then renamed).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from murano_engine.clouds.base import TemplateError
from murano_engine.clouds.local.resource import ResourceRecord

#: Where a stack keeps its records: live resources, and replaced ones awaiting deletion.
SECTIONS = ("resources", "replaced")
_STACK_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,254}")


def check_stack_name(name: str) -> None:
    """Refuse a name Heat refuses (a stack's folder and lock are named by it)."""
    if len(name) > 255:
        raise TemplateError(f"stack name {name[:40]!r}... has {len(name)} characters; "
                            "a stack name has 255 at most")
    if not _STACK_NAME.fullmatch(name):
        raise TemplateError(
            f"stack name {name!r} must start with a letter and hold only letters, "
            "digits, '_', '-' and '.'"
        )


def plain(value: Any) -> Any:
    """``value`` as JSON would give it back (YAML dates become strings)."""
    return json.loads(json.dumps(value, default=str))


@dataclass
class StackState:
    """Everything the local cloud knows about one stack."""

    name: str
    id: str
    status: str
    reason: str
    created: str
    updated: str | None = None
    template: dict[str, Any] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, ResourceRecord] = field(default_factory=dict)
    #: Resources replaced by an update, waiting to be deleted (keyed ``name~id``).
    replaced: dict[str, ResourceRecord] = field(default_factory=dict)

    @property
    def in_progress(self) -> bool:
        return self.status.endswith("_IN_PROGRESS")

    def set_aside(self, name: str) -> str:
        """Move a resource to ``replaced``, to be deleted; returns its key there."""
        record = self.resources.pop(name)
        key = f"{name}~{record.id}"
        self.replaced[key] = record
        return key

    def records(self) -> list[ResourceRecord]:
        return [*self.resources.values(), *self.replaced.values()]

    def to_json(self) -> dict[str, Any]:
        data = {key: value for key, value in vars(self).items() if not key.startswith("_")}
        data["resources"] = {k: r.to_json() for k, r in self.resources.items()}
        data["replaced"] = {k: r.to_json() for k, r in self.replaced.items()}
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StackState:
        data = dict(data)
        data["resources"] = {k: ResourceRecord.from_json(r) for k, r in data["resources"].items()}
        data["replaced"] = {k: ResourceRecord.from_json(r) for k, r in data["replaced"].items()}
        return cls(**data)


#: the longest resource key kept as its own file name (quoted); file names end at 255 bytes
LONGEST_FILE_KEY = 120


def _record_file(key: str) -> str:
    """The file name of resource ``key``'s record: the key quoted, or for a long one (Heat
    takes resource names of any length) its start and a digest of the whole."""
    quoted = quote(key, safe="")
    if len(quoted) <= LONGEST_FILE_KEY:
        return f"{quoted}.json"
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]
    return f"{quote(key[:40], safe='')[:LONGEST_FILE_KEY]}~{digest}.json"


class StackFiles:
    """Stack folders: ``<name>/stack.json`` plus one file per resource record
    (``resources/`` and ``replaced/``), so a resource step rewrites only its own."""

    def __init__(self, folder: Path, lock: threading.RLock) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self._lock = lock
        #: counts the changes written or read (every stack's): a stack's outputs worked
        #: out at one count hold until the next (``LocalCloud.get``)
        self.version = 0

    def _changed(self) -> None:
        with self._lock:
            self.version += 1

    def load_all(self) -> list[StackState]:
        self._changed()
        return [self._read(header) for header in sorted(self.folder.glob("*/stack.json"))]

    def load(self, name: str) -> StackState | None:
        """Stack ``name`` as it is on disk now (None when there is none)."""
        self._changed()
        header = self.folder / name / "stack.json"
        return self._read(header) if header.is_file() else None

    @staticmethod
    def _read(header: Path) -> StackState:
        data = json.loads(header.read_text(encoding="utf-8"))
        for section in SECTIONS:
            data[section] = {
                entry["key"]: entry["record"]
                for entry in (
                    json.loads(path.read_text(encoding="utf-8"))
                    for path in sorted((header.parent / section).glob("*.json"))
                )
            }
        return StackState.from_json(data)

    def save_stack(self, stack: StackState) -> None:
        """Write the stack's own fields (status, template ...), not its records."""
        with self._lock:
            self.version += 1
            header = {k: v for k, v in stack.to_json().items() if k not in SECTIONS}
        self._write(self.folder / stack.name / "stack.json", header)

    def save_record(self, stack: StackState, section: str, key: str) -> None:
        """Write one record of ``stack.resources`` or ``stack.replaced`` (or drop its
        file when the record is gone)."""
        path = self.folder / stack.name / section / _record_file(key)
        with self._lock:
            self.version += 1
            record = getattr(stack, section).get(key)
            entry = None if record is None else {"key": key, "record": record.to_json()}
        if entry is None:
            path.unlink(missing_ok=True)
        else:
            self._write(path, entry)

    def remove(self, name: str) -> None:
        self._changed()
        shutil.rmtree(self.folder / name, ignore_errors=True)

    @staticmethod
    def _write(target: Path, data: dict[str, Any]) -> None:
        """``data`` as ``target``'s JSON, whole (written beside it, then renamed); compact:
        json's C encoder writes only that, and a deploy writes each record several times."""
        text = json.dumps(data, default=str).encode("utf-8")
        folder, name = os.path.split(target)
        temporary = os.path.join(folder, f".{name}.{threading.get_ident()}.tmp")
        try:
            file = open(temporary, "wb")  # noqa: SIM115 - closed below
        except FileNotFoundError:  # the stack's or the section's first file
            os.makedirs(folder, exist_ok=True)
            file = open(temporary, "wb")  # noqa: SIM115
        with file:
            file.write(text)
        os.replace(temporary, target)
