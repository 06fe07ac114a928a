"""StaticActions: a bounded number of static actions at a time, a share of them per project,
each waited for with a timeout.

A slow action runs until the test opens its gate (``until``), not for a time: whether
it still holds its slot when the next call comes never depends on how fast the machine
is (they slept 1 s, and a call 0.1 s before that second ended had to find them running).
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from murano_engine.server import worker


@pytest.fixture
def actions(monkeypatch):
    def run_static_action(store, settings, services, project_id, request):
        if "until" in request:
            assert request["until"].wait(60), "the test never let the slow action end"
        if request.get("fail"):
            raise RuntimeError("failed on purpose")
        return {"status": 200, "result": request["value"]}

    monkeypatch.setattr(worker, "run_static_action", run_static_action)
    settings = SimpleNamespace(static_action_workers=1, static_action_workers_per_project=1,
                               static_action_timeout=0.5)
    return worker.StaticActions(None, settings, None)


@pytest.fixture
def shared(actions):
    """Three slots, two for one project."""
    settings = SimpleNamespace(static_action_workers=3, static_action_workers_per_project=2,
                               static_action_timeout=0.3)
    return worker.StaticActions(None, settings, None)


def test_a_finished_action_frees_its_slot_before_its_caller_has_the_answer(actions):
    # One slot: each call made right after the previous answer must find it free (a slot
    # freed after the answer was seen taken now and then on a loaded machine).
    for value in range(200):
        assert actions.call("p", {"value": value}) == {"status": 200, "result": value}
    with pytest.raises(RuntimeError, match="failed on purpose"):
        actions.call("p", {"fail": True})
    assert actions.call("p", {"value": 1}) == {"status": 200, "result": 1}


def until_answered(call, timeout: float = 30):
    """``call()``'s first answer that is not a refusal for want of a slot (a slot is freed
    by the thread that ran the action, just after it ends)."""
    deadline = time.monotonic() + timeout
    while True:
        answer = call()
        if answer["status"] not in (429, 503) or time.monotonic() > deadline:
            return answer
        time.sleep(0.01)


def test_a_slow_action_times_out_and_keeps_its_slot_until_it_ends(actions):
    gate = threading.Event()
    answer = actions.call("p", {"value": 1, "until": gate})
    assert answer["status"] == 504 and "static_action_timeout (0.5 s)" in answer["message"]
    busy = actions.call("p", {"value": 2})
    assert busy["status"] == 503 and "static_action_workers" in busy["message"]
    gate.set()  # the slow one ends: its slot is free again
    assert until_answered(lambda: actions.call("p", {"value": 3})) == \
        {"status": 200, "result": 3}


def test_one_project_takes_its_share_and_leaves_the_rest_to_others(shared):
    gate = threading.Event()
    for _ in range(2):
        answer = shared.call("greedy", {"value": 1, "until": gate})
        assert answer["status"] == 504
    refused = shared.call("greedy", {"value": 2})
    assert refused["status"] == 429
    assert refused["message"] == ("project greedy runs 2 static actions, as many as "
                                  "static_action_workers_per_project allows; try again later")
    assert shared.call("other", {"value": 3}) == {"status": 200, "result": 3}
    slow = shared.call("other", {"value": 4, "until": gate})
    assert slow["status"] == 504
    busy = shared.call("third", {"value": 5})  # all three slots taken
    assert busy["status"] == 503 and "static_action_workers allows" in busy["message"]
    gate.set()  # the slow ones end: every slot is free again
    assert until_answered(lambda: shared.call("third", {"value": 6})) == \
        {"status": 200, "result": 6}
    assert [until_answered(lambda: shared.call("greedy", {"value": 6})) for _ in range(2)] \
        == [{"status": 200, "result": 6}] * 2
