"""Durable plan storage: received plans, their results, and results not yet sent.

Layout under the ``storage`` folder::

    inbox/<seq>.json   a received message, written (and fsync'ed) before its ack
    attempts           ``<seq> <count>``: how often the plan in progress was started
    results/<id>.json  the result of every plan run (answers repeated plan ids)
    outbox.log         lines ``["+", id, replyTo]`` (to send) and ``["-", id]`` (sent);
                       emptied whenever nothing is left to send
    stamp              the last accepted plan Stamp

Files created per plan are few on purpose: creating and deleting files is what
costs most on a VM's disk, so the small records are rewritten or appended in place.

Every file is written atomically, so a killed agent loses nothing. Only the inbox
is fsync'ed: a power cut that loses a fresh result leaves its plan in the inbox,
and the plan runs again, as a plan interrupted by the cut would.

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
    """A result waiting to be sent (the result itself is in ``results/``)."""

    plan_id: str
    reply_to: str | None


def write_in_place(path: Path, text: str, sync: bool = False) -> None:
    """Overwrite the start of a small file with one write (no new file, no rename)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.pwrite(fd, text.encode("ascii"), 0)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def write_json(path: Path, data: Any, sync: bool = True) -> None:
    """Write ``data`` as JSON atomically (temp file, rename); durably unless ``sync`` is off."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(data, out)
        if sync:
            out.flush()
            os.fsync(out.fileno())
    os.replace(tmp, path)


class PlanStore:
    """The agent's on-disk queue of plans and results.

    The disk is the truth; lists in memory mirror it (read once at start) so the
    serving loop does not rescan folders for every message.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._inbox = root / "inbox"
        self._results = root / "results"
        self._outbox = root / "outbox.log"
        for folder in (root, self._inbox, self._results):
            folder.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o700)
        self._last_seq = 0
        self._prune_results()
        self._result_ids = {path.stem for path in self._results.glob("*.json")}
        self._pending = [self._load_message(path) for path in sorted(self._inbox.glob("*.json"))]
        self._outgoing = self._read_outbox()

    @property
    def stamp_file(self) -> Path:
        return self.root / "stamp"

    def _next_seq(self) -> str:
        self._last_seq = max(time.time_ns(), self._last_seq + 1)
        return f"{self._last_seq:020d}"

    @staticmethod
    def _load_message(path: Path) -> StoredMessage:
        record = json.loads(path.read_text(encoding="utf-8"))
        return StoredMessage(
            seq=path.stem,
            plan_id=record["ID"],
            body=base64.b64decode(record["Data"]),
            reply_to=record["ReplyTo"],
        )

    def _read_outbox(self) -> list[Outgoing]:
        outgoing: list[Outgoing] = []
        try:
            lines = self._outbox.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return outgoing
        for line in lines:
            try:
                sign, plan_id, *rest = json.loads(line)
            except ValueError:
                continue  # a line torn by a power cut
            if sign == "+" and plan_id in self._result_ids:
                outgoing.append(Outgoing(plan_id, rest[0] if rest else None))
            elif sign == "-":
                sent = next((o for o in outgoing if o.plan_id == plan_id), None)
                if sent is not None:
                    outgoing.remove(sent)
        return outgoing

    def _log_outbox(self, entry: list[Any]) -> None:
        with open(self._outbox, "a", encoding="utf-8") as log:
            log.write(json.dumps(entry) + "\n")

    def receive(self, plan_id: str, body: bytes, reply_to: str | None) -> None:
        """Keep a received message durably (call before acking it)."""
        seq = self._next_seq()
        record = {
            "ID": plan_id,
            "Data": base64.b64encode(body).decode("ascii"),
            "ReplyTo": reply_to,
        }
        write_json(self._inbox / f"{seq}.json", record)
        self._pending.append(StoredMessage(seq, plan_id, body, reply_to))

    def is_queued(self, plan_id: str) -> bool:
        """True while a plan with this id waits in the inbox or runs."""
        return any(message.plan_id == plan_id for message in self._pending)

    def pending(self) -> list[StoredMessage]:
        """Stored plans not yet answered, oldest first."""
        return list(self._pending)

    def start_attempt(self, message: StoredMessage) -> int:
        """Count one more start of this plan; returns the count including this one."""
        path = self.root / "attempts"
        try:
            seq, count = path.read_text().split()
        except (FileNotFoundError, ValueError):
            seq, count = "", "0"
        attempts = int(count) + 1 if seq == message.seq else 1
        write_in_place(path, f"{message.seq} {attempts:09d}")
        return attempts

    def has_result(self, plan_id: str) -> bool:
        """True when ``plan_id`` already ran and its result is kept."""
        return plan_id in self._result_ids

    def stored_result(self, plan_id: str) -> dict[str, Any]:
        """The result recorded for ``plan_id`` (see :meth:`has_result`)."""
        return json.loads((self._results / f"{plan_id}.json").read_text(encoding="utf-8"))

    def finish(self, message: StoredMessage, result: dict[str, Any]) -> None:
        """Record the result of an inbox plan, queue it for sending, drop the plan."""
        write_json(self._results / f"{message.plan_id}.json", result, sync=False)
        self._result_ids.add(message.plan_id)
        self.resend(message.plan_id, message.reply_to)
        (self._inbox / f"{message.seq}.json").unlink(missing_ok=True)
        self._pending.remove(message)

    def resend(self, plan_id: str, reply_to: str | None) -> None:
        """Queue the stored result of ``plan_id`` for (re)sending."""
        self._log_outbox(["+", plan_id, reply_to])
        self._outgoing.append(Outgoing(plan_id, reply_to))

    def outbox(self) -> list[Outgoing]:
        """Results to publish, oldest first."""
        return list(self._outgoing)

    def sent(self, outgoing: Outgoing) -> None:
        """Forget an outbox entry once the broker has it."""
        self._outgoing.remove(outgoing)
        if self._outgoing:
            self._log_outbox(["-", outgoing.plan_id])
        else:
            os.truncate(self._outbox, 0)

    def _prune_results(self) -> None:
        results = sorted(self._results.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in results[:-KEPT_RESULTS]:
            old.unlink(missing_ok=True)
