"""Durable plan storage: received plans, their results, and results not yet sent.

Everything lives in one append-only journal, ``<storage>/journal``, one JSON
array per line:

    ["P", seq, id, replyTo, b64body]  a received plan (fdatasync'ed before its ack)
    ["A", seq]                        one start of plan ``seq``
    ["C", seq, index, name, pgid,     script call ``index`` of plan ``seq`` started: the
     ticks, boot, started]            process group it leads, the leader's start time
                                      (clock ticks after boot ``boot``; null where
                                      unknown) and the wall-clock start (fdatasync'ed
                                      before the command may begin)
    ["F", seq, index, outcome]        that call ended: {exit_code, stdout, stderr,
                                      timed_out, interrupted}
    ["W", seq, index]                 that call never began (its agent died before
                                      the go-ahead): forgotten, the plan runs it
    ["R", seq, id, replyTo, result]   the result of plan ``seq`` (null for a resend),
                                      to be sent; the plan is done
    ["S", id]                         the oldest unsent result of ``id`` reached the broker
    ["K", id, result]                 a kept result, already sent (written by compaction)
    ["D", digest]                     a redelivered message (SHA-256 of its body) arrives
                                      (fdatasync'ed before it is read)
    ["H", digest]                     that message was handled: its count is dropped

plus ``<storage>/stamp``, the last accepted plan Stamp, and ``<storage>/runs/<seq>-<index>.*``,
the run files of each script call of a pending plan (its output and exit code, see
:mod:`murano_agent.detached`), removed with the plan's result.

Appending to one file costs far less than creating, renaming and deleting files
per plan, which is what dominates on a VM's disk. Only plan records and call
starts are synced: a power cut that loses a fresh result leaves its plan pending,
and the plan runs again, as a plan interrupted by the cut would, its started script
calls answered without running (:mod:`murano_agent.calls`); a call start must be
on disk before its command begins, or the command could run twice. A line torn by
a crash is skipped.
A call's F line whose outcome its run files also hold (the command ended by itself)
is written with the next line, or not at all when that is the plan's R: a plan with
one script costs one journal line more than a plan without.

When the journal has grown past :data:`COMPACT_BYTES` it is rewritten (synced,
atomically) with only what is still needed: pending plans, unsent results and
the last :data:`KEPT_RESULTS` results; run files of plans no longer pending go.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

from murano_agent import detached

#: How many old results are kept to answer repeated plan ids.
KEPT_RESULTS = 1000
#: Journal size that triggers compaction.
COMPACT_BYTES = 4 << 20

_datasync = getattr(os, "fdatasync", os.fsync)


@dataclasses.dataclass(frozen=True)
class StoredMessage:
    """A received plan message as kept in the journal."""

    seq: str
    plan_id: str
    body: bytes
    reply_to: str | None


@dataclasses.dataclass
class ScriptCall:
    """One script call of a pending plan as journaled: how to find its process again,
    and its outcome once it ended."""

    name: str
    pgid: int | None
    ticks: int | None
    boot: str | None
    started: float
    outcome: dict[str, Any] | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class Outgoing:
    """A result waiting to be sent (compared by identity: one entry per queued send)."""

    plan_id: str
    reply_to: str | None
    result: dict[str, Any]
    kept: bool = True  # False for a refusal not kept as the plan's result


def write_in_place(path: Path, text: str, sync: bool = False) -> None:
    """Overwrite the start of a small file with one write (no new file, no rename)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.pwrite(fd, text.encode("ascii"), 0)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _line(record: list[Any]) -> bytes:
    return (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8")


def _call_record(seq: str, index: int, call: ScriptCall) -> list[Any]:
    return ["C", seq, index, call.name, call.pgid, call.ticks, call.boot, call.started]


class PlanStore:
    """The agent's on-disk queue of plans and results.

    The journal is the truth; the lists in memory mirror it (replayed once at
    start) so the serving loop never reads the disk back.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o700)
        self._path = root / "journal"
        self._last_seq = 0
        self._pending: dict[str, StoredMessage] = {}
        self._attempts: collections.Counter[str] = collections.Counter()
        self._results: collections.OrderedDict[str, dict[str, Any]] = collections.OrderedDict()
        self._outgoing: list[Outgoing] = []
        self._deliveries: collections.Counter[str] = collections.Counter()
        self._calls: dict[str, dict[int, ScriptCall]] = {}
        self._deferred: list[list[Any]] = []  # F records not yet written
        self._replay()
        self._fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._size = os.fstat(self._fd).st_size
        self.runs.mkdir(exist_ok=True)
        self._remove_stale_runs()

    @property
    def stamp_file(self) -> Path:
        return self.root / "stamp"

    @property
    def runs(self) -> Path:
        """The folder holding the run files of script calls."""
        return self.root / "runs"

    def run_prefix(self, seq: str, index: int) -> Path:
        """Where the run files of call ``index`` of plan ``seq`` go: ``<prefix>.<kind>``."""
        return self.runs / f"{seq}-{index}"

    def close(self) -> None:
        """Close the journal (the store is unusable afterwards)."""
        if self._deferred:
            os.write(self._fd, b"".join(map(_line, self._deferred)))
        os.close(self._fd)

    # -- journal -----------------------------------------------------------------------

    def _replay(self) -> None:
        try:
            data = self._path.read_bytes()
        except FileNotFoundError:
            return
        for raw in data.splitlines():
            try:
                record = json.loads(raw)
                self._apply(record)
            except (ValueError, TypeError, IndexError, KeyError):
                continue  # a line torn by a crash or a power cut

    def _apply(self, record: list[Any]) -> None:
        kind = record[0]
        if kind == "P":
            _, seq, plan_id, reply_to, data = record
            self._pending[seq] = StoredMessage(seq, plan_id, base64.b64decode(data), reply_to)
            self._last_seq = max(self._last_seq, int(seq))
        elif kind == "A":
            self._attempts[record[1]] += 1
        elif kind == "C":
            _, seq, index, name, pgid, ticks, boot, started = record
            if seq in self._pending:
                self._calls.setdefault(seq, {})[int(index)] = ScriptCall(
                    name, pgid, ticks, boot, started
                )
        elif kind == "F":
            _, seq, index, outcome = record
            self._calls[seq][int(index)].outcome = dict(outcome)
        elif kind == "W":
            _, seq, index = record
            self._calls.get(seq, {}).pop(int(index), None)
        elif kind == "R":
            _, seq, plan_id, reply_to, result = record
            if seq is not None:
                self._pending.pop(seq, None)
                self._attempts.pop(seq, None)
                self._calls.pop(seq, None)
            self._keep(plan_id, result)
            self._outgoing.append(Outgoing(plan_id, reply_to, result))
        elif kind == "N":
            _, plan_id, reply_to, result = record
            self._outgoing.append(Outgoing(plan_id, reply_to, result, kept=False))
        elif kind == "S":
            self._drop_outgoing(record[1])
        elif kind == "K":
            self._keep(record[1], record[2])
        elif kind == "D":
            self._deliveries[record[1]] += 1
        elif kind == "H":
            self._deliveries.pop(record[1], None)

    def _append(self, record: list[Any], sync: bool = False) -> None:
        line = _line(record)
        if self._deferred:
            line = b"".join(map(_line, self._deferred)) + line
            self._deferred.clear()
        os.write(self._fd, line)
        self._size += len(line)
        if sync:
            _datasync(self._fd)

    def _keep(self, plan_id: str, result: dict[str, Any]) -> None:
        self._results[plan_id] = result
        self._results.move_to_end(plan_id)
        while len(self._results) > KEPT_RESULTS:
            self._results.popitem(last=False)

    def _drop_outgoing(self, plan_id: str) -> None:
        for index, outgoing in enumerate(self._outgoing):
            if outgoing.plan_id == plan_id:
                del self._outgoing[index]
                return

    def _compact_if_big(self) -> None:
        if self._size < COMPACT_BYTES:
            return
        unsent = {outgoing.plan_id for outgoing in self._outgoing if outgoing.kept}
        lines = [_line(["K", pid, res]) for pid, res in self._results.items() if pid not in unsent]
        for message in self._pending.values():
            data = base64.b64encode(message.body).decode("ascii")
            lines.append(_line(["P", message.seq, message.plan_id, message.reply_to, data]))
            lines.extend(_line(["A", message.seq]) for _ in range(self._attempts[message.seq]))
            for index, call in sorted(self._calls.get(message.seq, {}).items()):
                lines.append(_line(_call_record(message.seq, index, call)))
                if call.outcome is not None:
                    lines.append(_line(["F", message.seq, index, call.outcome]))
        lines.extend(_line(["R", None, o.plan_id, o.reply_to, o.result] if o.kept
                           else ["N", o.plan_id, o.reply_to, o.result]) for o in self._outgoing)
        for digest, count in self._deliveries.items():
            lines.extend(_line(["D", digest]) for _ in range(count))
        tmp = self._path.with_name("journal.tmp")
        with open(tmp, "wb") as out:
            out.writelines(lines)
            out.flush()
            os.fsync(out.fileno())
        os.close(self._fd)
        os.replace(tmp, self._path)
        if hasattr(os, "O_DIRECTORY"):  # make the rename itself durable (POSIX)
            folder = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
        self._fd = os.open(self._path, os.O_WRONLY | os.O_APPEND)
        self._size = os.fstat(self._fd).st_size
        self._deferred.clear()  # the rewritten journal holds them
        self._remove_stale_runs()

    def _remove_stale_runs(self) -> None:
        """Delete the run files of plans no longer pending (left by a crash)."""
        for name in os.listdir(self.runs):
            if name.partition("-")[0] not in self._pending:
                with contextlib.suppress(OSError):
                    os.unlink(self.runs / name)

    # -- plans -------------------------------------------------------------------------

    def _next_seq(self) -> str:
        self._last_seq = max(time.time_ns(), self._last_seq + 1)
        return str(self._last_seq)

    def receive(self, plan_id: str, body: bytes, reply_to: str | None) -> None:
        """Keep a received message durably (call before acking it)."""
        seq = self._next_seq()
        data = base64.b64encode(body).decode("ascii")
        self._append(["P", seq, plan_id, reply_to, data], sync=True)
        self._pending[seq] = StoredMessage(seq, plan_id, body, reply_to)

    def is_queued(self, plan_id: str) -> bool:
        """True while a plan with this id waits or runs."""
        return any(message.plan_id == plan_id for message in self._pending.values())

    def pending(self) -> list[StoredMessage]:
        """Stored plans not yet answered, oldest first."""
        return list(self._pending.values())

    def start_attempt(self, message: StoredMessage) -> int:
        """Count one more start of this plan; returns the count including this one."""
        self._append(["A", message.seq])
        self._attempts[message.seq] += 1
        return self._attempts[message.seq]

    # -- script calls ------------------------------------------------------------------

    def calls(self, seq: str) -> dict[int, ScriptCall]:
        """The script calls journaled for pending plan ``seq``, by index (live view)."""
        return self._calls.setdefault(seq, {})

    def call_started(self, seq: str, index: int, call: ScriptCall) -> None:
        """Journal, durably, that call ``index`` of plan ``seq`` started (before its
        command may begin: after a power cut it is known to have started)."""
        self._append(_call_record(seq, index, call), sync=True)
        self.calls(seq)[index] = call

    def call_withdrawn(self, seq: str, index: int) -> None:
        """Journal, durably, that call ``index`` of plan ``seq`` never began: it is
        forgotten, and the plan's Body runs it when it calls it again."""
        self._append(["W", seq, index], sync=True)
        self.calls(seq).pop(index, None)

    def call_finished(
        self, seq: str, index: int, outcome: dict[str, Any], in_run_files: bool
    ) -> None:
        """Journal the outcome of a started call. ``in_run_files``: its run files hold
        the same outcome (exit code file and output), so the line may wait for the next
        one and is dropped when that is the plan's result."""
        self._calls[seq][index].outcome = outcome
        if in_run_files:
            self._deferred.append(["F", seq, index, outcome])
        else:
            self._append(["F", seq, index, outcome])

    # -- results -----------------------------------------------------------------------

    def has_result(self, plan_id: str) -> bool:
        """True when ``plan_id`` already ran and its result is kept."""
        return plan_id in self._results

    def stored_result(self, plan_id: str) -> dict[str, Any]:
        """The result recorded for ``plan_id`` (see :meth:`has_result`)."""
        return self._results[plan_id]

    def finish(self, message: StoredMessage, result: dict[str, Any]) -> None:
        """Record the result of a pending plan and queue it for sending; its run files go."""
        self._deferred = [record for record in self._deferred if record[1] != message.seq]
        self._append(["R", message.seq, message.plan_id, message.reply_to, result])
        del self._pending[message.seq]
        self._attempts.pop(message.seq, None)
        for index in self._calls.pop(message.seq, {}):
            prefix = self.run_prefix(message.seq, index)
            for kind in detached.KINDS:
                with contextlib.suppress(OSError):
                    os.unlink(detached.run_file(prefix, kind))
        self._keep(message.plan_id, result)
        self._outgoing.append(Outgoing(message.plan_id, message.reply_to, result))

    def resend(self, plan_id: str, reply_to: str | None) -> None:
        """Queue the stored result of ``plan_id`` for sending again."""
        self.answer(plan_id, reply_to, self._results[plan_id])

    def answer(self, plan_id: str, reply_to: str | None, result: dict[str, Any]) -> None:
        """Queue ``result`` for a message not kept as a plan (one refused on arrival)."""
        self._append(["R", None, plan_id, reply_to, result])
        self._keep(plan_id, result)
        self._outgoing.append(Outgoing(plan_id, reply_to, result))

    def notify(self, plan_id: str, reply_to: str | None, result: dict[str, Any]) -> None:
        """Queue ``result`` for sending without keeping it as ``plan_id``'s result (the
        refusal of a replayed or unsigned message: the genuine plan may still come)."""
        self._append(["N", plan_id, reply_to, result])
        self._outgoing.append(Outgoing(plan_id, reply_to, result, kept=False))

    # -- redeliveries ------------------------------------------------------------------

    def redelivered(self, digest: str) -> int:
        """Count, durably, one more arrival of a redelivered message whose body has this
        SHA-256 ``digest``; returns how often it arrived without being handled."""
        self._append(["D", digest], sync=True)
        self._deliveries[digest] += 1
        return self._deliveries[digest]

    def handled(self, digest: str) -> None:
        """The message with this digest was stored or answered: forget its count."""
        if self._deliveries.pop(digest, None) is not None:
            self._append(["H", digest])

    def outbox(self) -> list[Outgoing]:
        """Results to publish, oldest first."""
        return list(self._outgoing)

    def sent(self, outgoing: Outgoing) -> None:
        """Forget an outbox entry once the broker has confirmed it."""
        self._outgoing.remove(outgoing)
        self._append(["S", outgoing.plan_id])
        self._compact_if_big()
