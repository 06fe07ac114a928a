"""A local stack's state and its file: ``<state>/stacks/<name>.json``, replaced atomically.

Saving is coalesced: while one thread writes, others only mark the stack
dirty, and the writer writes again until nothing changed meanwhile.
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from murano_engine.clouds.base import TemplateError
from murano_engine.clouds.local.resource import ResourceRecord

_STACK_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,254}")


def check_stack_name(name: str) -> None:
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


class StackFiles:
    """The folder of stack files, with coalesced saving."""

    def __init__(self, folder: Path, lock: threading.RLock) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self._lock = lock
        self._dirty: set[str] = set()
        self._writing: set[str] = set()
        self._guard = threading.Lock()

    def load_all(self) -> list[StackState]:
        return [
            StackState.from_json(json.loads(path.read_text(encoding="utf-8")))
            for path in sorted(self.folder.glob("*.json"))
        ]

    def save(self, stack: StackState) -> None:
        """Write the stack's file (or leave it to the thread already writing it)."""
        with self._guard:
            self._dirty.add(stack.name)
            if stack.name in self._writing:
                return
            self._writing.add(stack.name)
        while True:
            with self._guard:
                if stack.name not in self._dirty:
                    self._writing.discard(stack.name)
                    return
                self._dirty.discard(stack.name)
            try:
                with self._lock:
                    text = json.dumps(stack.to_json(), indent=1, default=str)
                self._write(stack.name, text)
            except BaseException:
                with self._guard:
                    self._writing.discard(stack.name)
                raise

    def remove(self, name: str) -> None:
        (self.folder / f"{name}.json").unlink(missing_ok=True)

    def _write(self, name: str, text: str) -> None:
        target = self.folder / f"{name}.json"
        temporary = target.with_suffix(f".{threading.get_ident()}.tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, target)
