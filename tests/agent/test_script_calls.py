"""Script calls on their own: the journal's C, F and W records, run files, settling a
call whose agent died (one that never got its go-ahead is withdrawn and runs once), and
replaying journaled calls."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from murano_agent import detached, storage
from murano_agent.calls import ScriptCalls
from murano_agent.plans import PlanError
from murano_agent.storage import PlanStore, ScriptCall
from murano_common import procfs


def kinds(root: Path) -> list[str]:
    """The record kinds in the journal, in order (a torn line reads as "?")."""
    found = []
    for raw in (root / "journal").read_bytes().splitlines():
        try:
            found.append(json.loads(raw)[0])
        except ValueError:
            found.append("?")
    return found


def outcome(code: int | None, stdout: str = "") -> dict:
    return {
        "exit_code": code,
        "stdout": stdout,
        "stderr": "",
        "timed_out": False,
        "interrupted": False,
    }


def pending_plan(tmp_path: Path) -> tuple[PlanStore, Any, Path]:
    """A store under ``tmp_path/storage`` with one pending plan, and a work folder."""
    store = PlanStore(tmp_path / "storage")
    store.receive("p1", b"{}", None)
    [message] = store.pending()
    work = tmp_path / "work"
    work.mkdir()
    return store, message, work


def test_call_records_replay_and_a_torn_last_line_is_skipped(tmp_path):
    store = PlanStore(tmp_path)
    store.receive("p1", b"{}", None)
    [message] = store.pending()
    store.start_attempt(message)
    store.call_started(message.seq, 0, ScriptCall("a", 41, 7, "boot", 1.5))
    store.call_finished(message.seq, 0, outcome(0, "one"), in_run_files=True)
    assert kinds(tmp_path) == ["P", "A", "C"]  # the F line waits for the next line
    store.call_started(message.seq, 1, ScriptCall("b", 42, 8, "boot", 2.5))
    assert kinds(tmp_path) == ["P", "A", "C", "F", "C"]
    with open(tmp_path / "journal", "ab") as journal:
        journal.write(b'["F","' + message.seq.encode() + b'",1,{"exit_')  # the agent died
    again = PlanStore(tmp_path)
    calls = again.calls(message.seq)
    assert calls[0] == ScriptCall("a", 41, 7, "boot", 1.5, outcome(0, "one"))
    assert calls[1] == ScriptCall("b", 42, 8, "boot", 2.5)  # started, no outcome yet


def test_an_outcome_not_in_the_run_files_is_written_at_once(tmp_path):
    store = PlanStore(tmp_path)
    store.receive("p1", b"{}", None)
    [message] = store.pending()
    store.call_started(message.seq, 0, ScriptCall("a", None, None, None, 1.0))
    store.call_finished(message.seq, 0, outcome(None), in_run_files=False)
    assert kinds(tmp_path) == ["P", "C", "F"]
    assert PlanStore(tmp_path).calls(message.seq)[0].outcome == outcome(None)


def test_the_result_drops_waiting_f_lines_and_the_run_files(tmp_path):
    store = PlanStore(tmp_path)
    store.receive("p1", b"{}", None)
    store.receive("p2", b"{}", None)
    first, second = store.pending()
    for message in (first, second):
        store.call_started(message.seq, 0, ScriptCall("a", 1, 1, "b", 1.0))
        for kind in ("out", "err", "exit"):
            detached.run_file(store.run_prefix(message.seq, 0), kind).write_text("x")
    store.call_finished(first.seq, 0, outcome(0), in_run_files=True)
    store.finish(first, {"r": 1})
    assert kinds(tmp_path) == ["P", "P", "C", "C", "R"]
    assert sorted(os.listdir(store.runs)) == [f"{second.seq}-0.{k}" for k in ("err", "exit", "out")]
    stale = store.runs / "123-0.out"  # left by a plan that is no longer pending
    stale.write_text("old")
    again = PlanStore(tmp_path)
    assert not stale.exists() and len(os.listdir(store.runs)) == 3
    assert first.seq not in {m.seq for m in again.pending()}
    assert again.calls(second.seq)[0].outcome is None


def test_compaction_keeps_the_calls_of_pending_plans_only(tmp_path, monkeypatch):
    monkeypatch.setattr(storage, "COMPACT_BYTES", 300)
    store = PlanStore(tmp_path)
    store.receive("pending", b"{}", None)
    [pending] = store.pending()
    store.start_attempt(pending)
    store.call_started(pending.seq, 0, ScriptCall("a", 5, 6, "boot", 1.0))
    store.call_finished(pending.seq, 0, outcome(2, "kept"), in_run_files=True)
    store.call_started(pending.seq, 1, ScriptCall("b", 7, 8, "boot", 2.0))
    for index in range(4):
        store.receive(f"done{index}", b"x" * 50, None)
        message = store.pending()[-1]
        store.call_started(message.seq, 0, ScriptCall("c", 9, 9, "boot", 3.0))
        store.finish(message, {"n": index})
        store.sent(store.outbox()[0])
    assert kinds(tmp_path).count("C") == 2  # compacted: only the pending plan's calls
    again = PlanStore(tmp_path)
    assert [m.plan_id for m in again.pending()] == ["pending"]
    calls = again.calls(pending.seq)
    assert calls[0].outcome == outcome(2, "kept") and calls[1].outcome is None
    assert again.stored_result("done3") == {"n": 3}


def start_group(tmp_path: Path, text: str) -> tuple[int, int]:
    """A shell in a session of its own, as a dead agent's wrapper: (pid, start ticks)."""
    proc = subprocess.Popen(["/bin/sh", "-c", text], cwd=tmp_path, start_new_session=True)
    ticks = procfs.start_ticks(proc.pid)
    assert ticks is not None
    return proc.pid, ticks


def stop(pid: int) -> int:
    """End the group ``pid`` leads (whatever is left of it); its leader's wait status."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    return os.waitpid(pid, 0)[1]


def ended(pid: int, wait: float) -> bool:
    """Whether ``pid`` ends (or is a zombie) within ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while (stat := Path(f"/proc/{pid}/stat")).exists() and b") Z" not in stat.read_bytes():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_recover_waits_for_the_group_then_reads_its_exit_code(tmp_path):
    prefix = tmp_path / "call"
    pid, ticks = start_group(tmp_path, "echo working >call.out; sleep 0.3; echo 6 >call.exit")
    try:
        done = detached.recover(prefix, pid, ticks, detached.boot_id(), 10)
    finally:
        stop(pid)
    assert (done.exit_code, done.stdout, done.timed_out, done.interrupted) == (
        6,
        "working\n",
        False,
        False,
    )


def test_recover_kills_the_group_at_the_time_limit(tmp_path):
    pid, ticks = start_group(tmp_path, "sleep 30 & echo $! >child; wait")
    started = time.monotonic()
    try:
        done = detached.recover(tmp_path / "call", pid, ticks, detached.boot_id(), 0.3)
        child = int((tmp_path / "child").read_text())
        assert ended(pid, 5) and ended(child, 5), "the group outlived the time limit"
    finally:
        status = stop(pid)
    assert done.timed_out and not done.interrupted and done.exit_code is None
    assert time.monotonic() - started < 5 and status == signal.SIGKILL


def test_a_reused_pid_is_neither_waited_for_nor_killed(tmp_path):
    pid, ticks = start_group(tmp_path, "sleep 30")
    try:
        done = detached.recover(tmp_path / "call", pid, ticks + 1, detached.boot_id(), 10)
        assert done.interrupted and done.exit_code is None
        assert procfs.start_ticks(pid) == ticks  # still running: not ours to end
        done = detached.recover(tmp_path / "call", pid, ticks, "another boot", 10)
        assert done.interrupted and procfs.start_ticks(pid) == ticks
    finally:
        stop(pid)


def test_an_exit_file_torn_by_a_crash_is_no_exit_code(tmp_path):
    prefix = tmp_path / "call"
    detached.run_file(prefix, "exit").write_bytes(b"")
    assert detached.read_exit(prefix) is None
    detached.run_file(prefix, "exit").write_bytes(b"13\n")
    assert detached.read_exit(prefix) == 13


def test_calls_replay_in_order_and_a_changed_order_is_refused(tmp_path):
    store, message, work = pending_plan(tmp_path)
    calls = ScriptCalls(store, message.seq, 60)
    assert not calls.resumed

    def command(text: str):
        return lambda: (["/bin/sh", "-c", text], work)

    first = calls.run("a", command("echo one"), None, lambda: 10)
    second = calls.run("b", command("cat; exit 3"), "input", lambda: 10)
    assert (first.exit_code, first.stdout, second.exit_code, second.stdout) == (
        0,
        "one\n",
        3,
        "input",
    )
    again = ScriptCalls(PlanStore(tmp_path / "storage"), message.seq, 60)  # after a crash
    assert again.resumed
    again.settle(lambda: 10)
    never = command("echo ran >> ran")
    assert again.run("a", never, None, lambda: 10) == first
    with pytest.raises(PlanError, match="called script 'a' as call 2, where it had called 'b'"):
        again.run("a", never, None, lambda: 10)
    assert not (work / "ran").exists()


class _AgentDied(Exception):
    """Stands for the agent's death between journaling a call and its go-ahead."""


def test_a_wrapper_without_its_go_ahead_marks_its_command_never_begun(tmp_path):
    prefix = tmp_path / "call"
    journaled = []

    def journal_then_die(pgid, ticks):
        journaled.append(pgid)
        raise _AgentDied

    with pytest.raises(_AgentDied):
        detached.start(["/bin/sh", "-c", "echo ran >> ran"], tmp_path, prefix, None,
                       journal_then_die)
    assert journaled and not (tmp_path / "ran").exists()
    assert detached.never_started(prefix) and detached.read_exit(prefix) is None
    detached.run_file(prefix, "exit").write_bytes(b"0\n")
    assert not detached.never_started(prefix)


def test_a_journaled_call_that_never_began_runs_once_after_a_restart(tmp_path):
    store, message, work = pending_plan(tmp_path)
    prefix = store.run_prefix(message.seq, 0)

    def journal_then_die(pgid, ticks):
        store.call_started(message.seq, 0, ScriptCall("a", pgid, ticks, detached.boot_id(),
                                                      time.time()))
        raise _AgentDied

    with pytest.raises(_AgentDied):
        detached.start(["/bin/sh", "-c", "echo ran >> ran"], work, prefix, None,
                       journal_then_die)
    assert kinds(tmp_path / "storage")[-1] == "C"

    again = ScriptCalls(PlanStore(tmp_path / "storage"), message.seq, 60)  # restarted
    again.settle(lambda: 10)
    assert kinds(tmp_path / "storage")[-1] == "W"
    assert PlanStore(tmp_path / "storage").calls(message.seq) == {}
    done = again.run("a", lambda: (["/bin/sh", "-c", "echo ran >> ran; echo ok"], work),
                     None, lambda: 10)
    assert (done.exit_code, done.stdout, done.interrupted) == (0, "ok\n", False)
    assert (work / "ran").read_text() == "ran\n"  # once, by the restarted agent
    assert detached.read_exit(prefix) == 0 and not detached.never_started(prefix)


def test_a_call_that_began_is_not_withdrawn(tmp_path):
    store, message, work = pending_plan(tmp_path)
    calls = ScriptCalls(store, message.seq, 60)
    calls.run("a", lambda: (["/bin/sh", "-c", "exit 4"], work), None, lambda: 10)
    again = ScriptCalls(PlanStore(tmp_path / "storage"), message.seq, 60)
    again.settle(lambda: 10)
    assert "W" not in kinds(tmp_path / "storage")
    assert again.run("a", lambda: (["/bin/sh", "-c", "exit 9"], work), None,
                     lambda: 10).exit_code == 4
