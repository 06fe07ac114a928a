"""The deployment journal: what a run records, how a second run replays it."""

from __future__ import annotations

import json
import os
import random
import threading
from pathlib import Path

import pytest
from dsl_helpers import class_text, write_package

from murano_engine.dsl import concurrency
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.engine.interpreter import build_interpreter
from murano_engine.engine.journal import (
    TAMPERED,
    Cancelled,
    Chain,
    FileJournal,
    Journal,
    JournalError,
    RecordingFailed,
    journal_key,
)
from murano_engine.messaging.errors import AgentError


class Crash(BaseException):
    """Stands for the process dying in the middle of a call."""


def reopen(path: Path) -> Journal:
    return Journal(FileJournal.open(path))


def test_values_are_recorded_and_replayed_without_reaching_outside(tmp_path):
    path = tmp_path / "run.journal"
    first = Journal(FileJournal.create(path, {"command": "deploy"}))
    ids = [first.new_id() for _ in range(3)]
    asked = first.value("stack.get", "s1", lambda: {"template": {"a": 1}})

    second = reopen(path)
    assert FileJournal.open(path).header == {"command": "deploy"}
    assert [second.new_id() for _ in range(3)] == ids
    assert second.value("stack.get", "s1", lambda: pytest.fail("asked again")) == asked
    assert second.replayed == 4
    assert second.new_id() not in ids  # past the journal's end: live again


def test_a_stacks_outputs_read_again_unchanged_are_recorded_as_a_reference(tmp_path):
    """Each instance reads its stack's outputs after every push: a value the same as
    the last one of that stack is recorded as a reference to it, and replays alike."""
    path = tmp_path / "run.journal"
    first = Journal(FileJournal.create(path, {}))
    big = {f"vm{n}-ip": f"10.0.0.{n}" for n in range(200)}
    readings = [big, dict(big), dict(big), {**big, "vm0-ip": "10.0.1.0"}, {}, {}]
    got = [first.value("stack.output", "env", lambda r=r: r) for r in readings]
    other = first.value("stack.output", "other-env", lambda: dict(big))  # its own scope
    assert got == readings and other == big
    entries = FileJournal.open(path).load()
    whole = [e for e in entries if "v" in e]
    assert [e["v"] == big for e in whole] == [True, False, False, True]  # 1st, 4th, 5th, other
    assert [e["same"] for e in entries if "same" in e] == \
        ["|stack.output|env|0", "|stack.output|env|0", "|stack.output|env|4"]
    assert path.stat().st_size < 3.5 * len(json.dumps(big))  # 3 whole of 7

    second = reopen(path)
    assert [second.value("stack.output", "env", lambda: pytest.fail("asked again"))
            for _ in readings] == readings
    assert second.value("stack.output", "other-env", lambda: pytest.fail("asked")) == big


def test_an_effect_begun_but_not_ended_is_carried_out_again_as_it_was(tmp_path):
    path = tmp_path / "run.journal"
    first = Journal(FileJournal.create(path, {}))
    first.effect("agent.call", "q", lambda: {"id": "plan-1"}, lambda intent: "one")

    def die(intent):
        raise Crash

    with pytest.raises(Crash):
        first.effect("agent.call", "q", lambda: {"id": "plan-2"}, die)

    second = reopen(path)
    sent = []
    assert second.effect("agent.call", "q", lambda: pytest.fail("new intent"),
                         lambda intent: sent.append(intent) or "x") == "one"
    assert second.effect("agent.call", "q", lambda: pytest.fail("new intent"),
                         lambda intent: sent.append(intent) or "two") == "two"
    assert sent == [{"id": "plan-2"}]  # only the unanswered plan, with its own id
    assert reopen(path).effect("agent.call", "q", dict, lambda intent: "no") == "one"


def test_a_recorded_error_is_raised_again_with_its_class_and_details(tmp_path):
    path = tmp_path / "run.journal"
    first = Journal(FileJournal.create(path, {}))

    def fail(intent):
        raise AgentError({"message": "exit 3", "details": {"exitCode": 3}})

    with pytest.raises(AgentError):
        first.effect("agent.call", "q", dict, fail)

    with pytest.raises(AgentError) as caught:
        reopen(path).effect("agent.call", "q", dict, lambda intent: pytest.fail("sent"))
    assert caught.value.info == {"message": "exit 3", "details": {"exitCode": 3}}
    assert str(caught.value) == "exit 3"


def test_errors_of_code_outside_the_engine_are_not_recorded(tmp_path):
    path = tmp_path / "run.journal"
    first = Journal(FileJournal.create(path, {}))
    with pytest.raises(ZeroDivisionError):
        first.value("x", "", lambda: 1 / 0)
    assert reopen(path).value("x", "", lambda: 7) == 7


def test_a_torn_last_line_is_dropped_and_a_damaged_one_named(tmp_path):
    path = tmp_path / "run.journal"
    journal = Journal(FileJournal.create(path, {}))
    kept = journal.new_id()
    with path.open("ab") as out:
        out.write(b'{"k":"|id||1","t":"end","v":"ab')  # the crash cut this write short
    replay = reopen(path)
    assert replay.new_id() == kept
    fresh = replay.new_id()  # the torn entry is gone: a new id, appended cleanly
    assert fresh != kept
    again = reopen(path)
    assert [again.new_id(), again.new_id()] == [kept, fresh]

    lines = path.read_bytes().split(b"\n")
    lines[1] = b"garbage"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(JournalError, match=r"run\.journal:2: not a journal entry"):
        FileJournal.open(path)


def test_parallel_branches_replay_alike_however_they_interleave(tmp_path):
    path = tmp_path / "run.journal"

    def run(journal: Journal) -> list[list[str]]:
        def branch() -> list[str]:
            got = []
            for _ in range(3):
                concurrency.sleep(random.random() / 100)
                got.append(journal.new_id())
            return got

        with concurrency.new_tree():
            return concurrency.run_all([branch for _ in range(4)])

    first = run(Journal(FileJournal.create(path, {})))
    assert len({i for ids in first for i in ids}) == 12
    assert run(reopen(path)) == first


def test_the_touched_stacks_queues_and_identities_survive_the_journal(tmp_path):
    path = tmp_path / "run.journal"
    first = Journal(FileJournal.create(path, {}))
    first.effect("stack.push", "murano-env", dict, lambda intent: {})
    first.effect("agent.call", "e1-h2", lambda: {"id": "p", "results": "-execution-results-r"},
                 lambda intent: None)
    first.value("broker.identity", "e1-h3", lambda: {"login": "murano-agent-e1-h3"})
    assert reopen(path).touched() == {"stacks": {"murano-env"},
                                      "queues": {"e1-h2", "-execution-results-r"},
                                      "identities": {"e1-h3"}}


WAITER = class_text("t.jrn", "Waiter", """
    Methods:
      run:
        Body:
          - Try:
              - sleep(30)
            Catch:
              - Do:
                  - Return: caught
          - Return: slept
""")


def test_a_cancelled_run_stops_and_murano_code_cannot_catch_it(tmp_path):
    write_package(tmp_path, "t.jrn", {"Waiter": WAITER})
    loader = PackageLoader([tmp_path], build_interpreter())
    journal = Journal()
    executor = Executor(loader, outside=journal)
    cls = loader.find_class("t.jrn.Waiter")
    threading.Timer(0.2, journal.cancel).start()

    with pytest.raises(Cancelled):
        executor.invoke(cls.find_method("run"), executor.new_object(cls), [], {}, None)


KEY = b"k" * 32


def recorded_run(path: Path, key: bytes | None = KEY) -> list[bytes]:
    """A journal of a run that sent a plan and got its answer, then sent a second one
    that was in flight when the process died; its lines."""
    journal = Journal(FileJournal.create(path, {"command": "deploy", "model": "m1"}, key))
    journal.new_id()
    journal.effect("agent.call", "q", lambda: {"id": "plan-1"}, lambda intent: {"ok": 1})

    def die(intent):
        raise Crash

    with pytest.raises(Crash):
        journal.effect("agent.call", "q", lambda: {"id": "plan-2"}, die)
    return path.read_bytes().splitlines(keepends=True)


def refused(path: Path, line: int, key: bytes | None = KEY) -> None:
    with pytest.raises(JournalError) as caught:
        FileJournal.open(path, key)
    assert str(caught.value) == f"{path}:{line}: {TAMPERED}"


def test_a_forged_result_for_a_plan_in_flight_is_refused(tmp_path):
    path = tmp_path / "run.journal"
    lines = recorded_run(path)
    last = json.loads(lines[-1])
    assert last["t"] == "begin" and last["v"] == {"id": "plan-2"}
    forged = {"k": last["k"], "t": "end", "v": {"stdout": "made up"}}
    # A forger who knows the format but not the key: an unkeyed digest after the last.
    chain = Chain(None)
    chain.last = last["d"]
    body = json.dumps(forged, separators=(",", ":")).encode()
    line = b'{"d":"' + chain.seal(body).encode() + b'",' + body[1:] + b"\n"
    path.write_bytes(b"".join(lines) + line)
    refused(path, len(lines) + 1)
    no_digest = json.dumps(forged).encode() + b"\n"
    path.write_bytes(b"".join(lines) + no_digest)
    with pytest.raises(JournalError, match=rf"run\.journal:{len(lines) + 1}: not a journal "
                                           r"entry \(no digest"):
        FileJournal.open(path, KEY)
    assert path.read_bytes() == b"".join(lines) + no_digest  # left as it was


def test_reordered_removed_and_spliced_lines_are_refused(tmp_path):
    path = tmp_path / "run.journal"
    lines = recorded_run(path)
    path.write_bytes(b"".join([lines[0], lines[2], lines[1], *lines[3:]]))
    refused(path, 2)
    path.write_bytes(b"".join([lines[0], *lines[2:]]))
    refused(path, 2)
    other = recorded_run(tmp_path / "other.journal")
    path.write_bytes(b"".join([*lines[:3], other[3], *lines[4:]]))
    refused(path, 4)  # the same entry, but another run's: its chain is not this one's


def test_an_edited_header_is_refused(tmp_path):
    path = tmp_path / "run.journal"
    lines = recorded_run(path)
    path.write_bytes(b"".join([lines[0].replace(b'"m1"', b'"m2"'), *lines[1:]]))
    refused(path, 1)


def test_a_journal_checks_out_only_with_its_own_key(tmp_path):
    path = tmp_path / "run.journal"
    lines = recorded_run(path)
    refused(path, 1, key=b"x" * 32)
    refused(path, 1, key=None)
    journal = Journal(FileJournal.open(path, KEY))
    assert journal.effect("agent.call", "q", dict, lambda intent: pytest.fail("sent")) == \
        {"ok": 1}
    unkeyed = tmp_path / "unkeyed.journal"
    recorded_run(unkeyed, key=None)
    assert len(FileJournal.open(unkeyed).load()) == len(lines) - 1


def test_a_whole_last_line_without_its_newline_is_torn_and_dropped(tmp_path):
    path = tmp_path / "run.journal"
    lines = recorded_run(path)
    path.write_bytes(b"".join(lines)[:-1])  # the write that ended in the newline was cut
    journal = FileJournal.open(path, KEY)
    assert len(journal.load()) == len(lines) - 2
    resumed = Journal(journal)
    assert resumed.effect("agent.call", "q", dict, lambda intent: None) == {"ok": 1}
    resumed.effect("agent.call", "q", lambda: {"id": "plan-2"},
                   lambda intent: None)  # appends where the dropped line was
    assert len(FileJournal.open(path, KEY).load()) == len(lines)


def test_the_journal_key_is_made_once_for_its_owner_only(tmp_path):
    path = tmp_path / "keys" / "journal.key"
    key = journal_key(path)
    assert key is not None and len(key) == 64
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert journal_key(path) == key
    assert journal_key("") is None
    os.chmod(path, 0o644)
    with pytest.raises(JournalError, match=r"readable by its owner only \(chmod 600"):
        journal_key(path)
    (tmp_path / "a-file").write_text("")
    with pytest.raises(JournalError, match=r"a-file/journal\.key: cannot make or read the "
                                           r"journal key \(File exists\); set \[engine\] "
                                           r"journal_key_file"):
        journal_key(tmp_path / "a-file" / "journal.key")


def test_threads_appending_at_once_leave_a_chain_that_checks_out(tmp_path):
    path = tmp_path / "run.journal"
    store = FileJournal.create(path, {}, KEY)

    def append(thread: int) -> None:
        for n in range(200):
            store.append({"k": f"{thread}|id||{n}", "t": "end", "v": n})

    threads = [threading.Thread(target=append, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(FileJournal.open(path, KEY).load()) == 1600


_GREEN_APPENDS = """
import json, sys, time
from murano_engine.dsl import concurrency
concurrency.setup()
from eventlet.patcher import original
time = original("time")
from murano_engine.engine import journal
syncs, ticks = [], [0]
real = journal._datasync
def slow_sync(fd):  # a slow disk: 50 ms a sync
    time.sleep(0.05)  # the real sleep (patched, it would switch green threads instead)
    real(fd)
    syncs.append(fd)
journal._datasync = slow_sync
store = journal.FileJournal.create(sys.argv[1], {"command": "deploy"})
def ticker():
    for _ in range(40):
        ticks[0] += 1
        concurrency.sleep(0.005)
def appender(n):
    return lambda: store.append({"k": f"value|{n}", "t": "end", "v": n})
started = time.monotonic()
concurrency.run_all([ticker] + [appender(n) for n in range(20)])
print(json.dumps({"syncs": len(syncs), "ticks": ticks[0],
                  "seconds": time.monotonic() - started}))
"""


def test_concurrent_appends_share_syncs_made_off_the_hub_and_all_reach_the_file(tmp_path):
    # Twenty green threads append at once on a disk whose sync takes 50 ms: each append
    # returns only once its line is synced, but the lines written while one sync ran
    # share the next, and the other green threads run meanwhile (the sync is in a real
    # thread). In a process of its own: setup() makes its I/O cooperative.
    import subprocess
    import sys
    path = tmp_path / "run.journal"
    done = subprocess.run([sys.executable, "-c", _GREEN_APPENDS, str(path)],
                          capture_output=True, text=True, check=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["syncs"] <= 3  # one for the first line, one or two for the rest
    assert figures["ticks"] == 40  # the ticker went on while syncs were in flight
    assert figures["seconds"] < 0.05 * 20  # not a sync per append, one after another
    replayed = FileJournal.open(path).load()
    assert sorted(entry["v"] for entry in replayed) == list(range(20))


STAMPER = class_text("t.jrn", "Stamper", """
    Methods:
      run:
        Body:
          - $ids: []
          - For: i
            In: range(4)
            Do:
              - Try:
                  - $ids: $ids + [randomName()]
                Catch:
                  - Do:
                      - $ids: $ids + [caught]
          - Return: $ids
""")


class _FailingStore:
    """A journal store that refuses its ``fail_at``-th append, as a full disk or a
    database gone away does."""

    def __init__(self, fail_at: int) -> None:
        self.entries: list[dict] = []
        self.fail_at = fail_at

    def load(self) -> list[dict]:
        return list(self.entries)

    def append(self, entry: dict) -> None:
        if len(self.entries) + 1 == self.fail_at:
            raise OSError(28, "No space left on device")
        self.entries.append(entry)

    def close(self) -> None:
        pass


def test_a_step_that_cannot_be_recorded_stops_the_run_and_murano_code_cannot_catch_it(
        tmp_path):
    write_package(tmp_path, "t.jrn", {"Stamper": STAMPER})
    loader = PackageLoader([tmp_path], build_interpreter())
    cls = loader.find_class("t.jrn.Stamper")
    store = _FailingStore(fail_at=3)
    executor = Executor(loader, outside=Journal(store))

    with pytest.raises(RecordingFailed) as stopped:
        executor.invoke(cls.find_method("run"), executor.new_object(cls), [], {}, None)
    assert str(stopped.value) == ("the journal could not record step |name||1: "
                                  "[Errno 28] No space left on device")
    # the steps before it, as they were: the object's id, the first name
    assert [entry["k"] for entry in store.entries] == ["|id||0", "|name||0"]

    # Resumed with a store that takes its appends: the two steps recorded are replayed,
    # the one that was not recorded and those after it are taken live; none was caught.
    store.fail_at = 0
    resumed = Journal(store)
    executor = Executor(loader, outside=resumed)
    ids = executor.invoke(cls.find_method("run"), executor.new_object(cls), [], {}, None)
    assert ids[0] == store.entries[1]["v"]
    assert "caught" not in ids and len(set(ids)) == 4
    assert resumed.replayed == 2 and len(store.entries) == 5


_FULL_DISK = """
import json, resource, signal, sys
from murano_engine.engine.journal import FileJournal, Journal, RecordingFailed
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
journal = Journal(FileJournal.create(sys.argv[1], {"command": "deploy"}))
limit = 2000
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
recorded = []
try:
    while True:
        recorded.append(journal.value("blob", "", lambda: "x" * 150))
except RecordingFailed as exc:
    print(json.dumps({"recorded": len(recorded), "error": str(exc)}))
"""


def test_a_full_disk_leaves_the_journal_whole_and_the_run_resumable(tmp_path):
    # A file size limit stands for a full disk: the write that crosses it is cut short
    # (a line torn in the middle), the next fails outright. The entry is taken back
    # from the file, the run stops, and the journal opens with every step before it.
    import subprocess
    import sys
    path = tmp_path / "run.journal"
    done = subprocess.run([sys.executable, "-c", _FULL_DISK, str(path)], capture_output=True,
                          text=True, check=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["recorded"] >= 5
    assert outcome["error"].startswith(
        f"the journal could not record step |blob||{outcome['recorded']}: ")
    assert "bytes were written" in outcome["error"]  # the torn write
    assert path.read_bytes().endswith(b"\n")
    journal = reopen(path)
    assert journal.replayed == 0 and len(FileJournal.open(path).load()) == outcome["recorded"]
    for _ in range(outcome["recorded"]):
        assert journal.value("blob", "", lambda: pytest.fail("done again")) == "x" * 150
    journal.value("blob", "", lambda: "after")  # the chain goes on from the last whole line
    assert len(FileJournal.open(path).load()) == outcome["recorded"] + 1
