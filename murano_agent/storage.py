"""Durable plan storage: received plans, their results, and results not yet sent.

Layout under the ``storage`` folder::

    inbox/<seq>.json       a received message, written (and fsync'ed) before its ack
    inbox/<seq>.attempts   how many times its execution was started
    results/<id>.json      the result of every plan run (answers repeated plan ids)
    outbox/<seq>_<id>      a result still to publish
    stamp                  the last accepted plan Stamp

``seq`` are nanosecond stamps made strictly increasing, so names sort in arrival order.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

#: How many old results are kept to answer repeated plan ids.
KEPT_RESULTS = 1000


@dataclasses.dataclass(frozen=True)
class StoredMessage:
    """A received plan message as kept in the inbox."""

    seq: str
    plan_id: str
    body: bytes
    reply_to: str | None


@dataclasses.dataclass(frozen=True)
class Outgoing:
    """A result waiting in the outbox."""

    marker: Path
    plan_id: str
    result: dict[str, Any]
    reply_to: str | None


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON atomically and durably (temp file, fsync, rename)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(data, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


class PlanStore:
    """The agent's on-disk queue of plans and results."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._inbox = root / "inbox"
        self._results = root / "results"
        self._outbox = root / "outbox"
        for folder in (root, self._inbox, self._results, self._outbox):
            folder.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o700)
        self._last_seq = 0
        self._queued_ids = {m.plan_id for m in self.pending()}
        self._prune_results()

    @property
    def stamp_file(self) -> Path:
        return self.root / "stamp"

    def _next_seq(self) -> str:
        self._last_seq = max(time.time_ns(), self._last_seq + 1)
        return f"{self._last_seq:020d}"

    def receive(self, plan_id: str, body: bytes, reply_to: str | None) -> None:
        """Keep a received message durably (call before acking it)."""
        seq = self._next_seq()
        record = {
            "ID": plan_id,
            "Data": base64.b64encode(body).decode("ascii"),
            "ReplyTo": reply_to,
        }
        write_json(self._inbox / f"{seq}.json", record)
        self._queued_ids.add(plan_id)

    def is_queued(self, plan_id: str) -> bool:
        """True while a plan with this id waits in the inbox or runs."""
        return plan_id in self._queued_ids

    def pending(self) -> list[StoredMessage]:
        """Stored plans not yet answered, oldest first."""
        found = []
        for path in sorted(self._inbox.glob("*.json")):
            record = json.loads(path.read_text(encoding="utf-8"))
            found.append(
                StoredMessage(
                    seq=path.stem,
                    plan_id=record["ID"],
                    body=base64.b64decode(record["Data"]),
                    reply_to=record["ReplyTo"],
                )
            )
        return found

    def start_attempt(self, message: StoredMessage) -> int:
        """Count one more start of this plan; returns the count including this one."""
        path = self._inbox / f"{message.seq}.attempts"
        count = int(path.read_text()) + 1 if path.exists() else 1
        path.write_text(str(count))
        return count

    def stored_result(self, plan_id: str) -> dict[str, Any] | None:
        """The result recorded for ``plan_id``, if that plan already ran."""
        try:
            return json.loads((self._results / f"{plan_id}.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def finish(self, message: StoredMessage, result: dict[str, Any]) -> None:
        """Record the result of an inbox plan, queue it for sending, drop the plan."""
        write_json(self._results / f"{message.plan_id}.json", result)
        self.resend(message.plan_id, message.reply_to)
        for suffix in (".json", ".attempts"):
            (self._inbox / f"{message.seq}{suffix}").unlink(missing_ok=True)
        self._queued_ids.discard(message.plan_id)

    def resend(self, plan_id: str, reply_to: str | None) -> None:
        """Queue the stored result of ``plan_id`` for (re)sending."""
        write_json(self._outbox / f"{self._next_seq()}_{plan_id}", {"ReplyTo": reply_to})

    def outbox(self) -> list[Outgoing]:
        """Results to publish, oldest first."""
        found = []
        for marker in sorted(self._outbox.glob("*_*")):
            if marker.name.endswith(".tmp"):
                continue
            plan_id = marker.name.split("_", 1)[1]
            result = self.stored_result(plan_id)
            if result is None:
                marker.unlink()
                continue
            reply_to = json.loads(marker.read_text(encoding="utf-8"))["ReplyTo"]
            found.append(Outgoing(marker, plan_id, result, reply_to))
        return found

    def sent(self, outgoing: Outgoing) -> None:
        """Forget an outbox entry once the broker has it."""
        outgoing.marker.unlink(missing_ok=True)

    def _prune_results(self) -> None:
        results = sorted(self._results.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in results[:-KEPT_RESULTS]:
            old.unlink(missing_ok=True)
