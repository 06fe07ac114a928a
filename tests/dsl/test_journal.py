"""The deployment journal: what a run records, how a second run replays it."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest
from dsl_helpers import class_text, write_package

from murano_engine import concurrency
from murano_engine.dsl.executor import Executor
from murano_engine.dsl.packages import PackageLoader
from murano_engine.interpreter import build_interpreter
from murano_engine.journal import Cancelled, FileJournal, Journal, JournalError
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
