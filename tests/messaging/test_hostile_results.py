"""Results come from guests, which run tenants' code: a hostile one is dropped, not fatal."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import pytest

from murano_engine.messaging.listener import ResultListener


def _message(body: str | bytes, acked: list[str], message_id: str = "") -> SimpleNamespace:
    """A delivered message as the listener sees it; acking it notes its id in ``acked``."""
    return SimpleNamespace(
        body=body, properties={"message_id": message_id}, ack=lambda: acked.append(message_id)
    )


def test_deep_huge_or_broken_results_are_dropped_and_the_listener_goes_on(caplog):
    listener = ResultListener("memory://", "results-hostile")
    waiter = listener.subscribe("plan-1")
    acked: list[str] = []
    bodies = ("[" * 100_000, b"\xff\xfe{", "{'not': json}", "x" * (17 * 1024 * 1024))
    with caplog.at_level(logging.WARNING):
        for number, body in enumerate(bodies):
            listener._on_message(_message(body, acked, f"bad-{number}"))
    assert waiter.wait(0) is None
    assert len([r for r in caplog.records if "dropping undecodable result" in r.message]) == 4
    assert any("nested deeper" in r.message for r in caplog.records)
    assert acked == ["bad-0", "bad-1", "bad-2", "bad-3"]  # dropped, not left to come again

    listener._on_message(_message(json.dumps({"SourceID": "plan-1", "Result": 42}), acked))
    assert waiter.wait(1) == {"SourceID": "plan-1", "Result": 42}
    assert len(acked) == 5


def test_an_unreadable_result_of_a_waiting_plan_fails_it_at_once(caplog):
    # The agent names the plan in the message's id: the plan fails with why, instead of
    # waiting out its timeout (the agent answers a plan sent again with the same result).
    from murano_engine.messaging import AgentError
    from murano_engine.messaging.results import decode_result
    listener = ResultListener("memory://", "results-hostile")
    waiter = listener.subscribe("plan-2")
    acked: list[str] = []
    with caplog.at_level(logging.WARNING):
        listener._on_message(_message("x" * (17 * 1024 * 1024), acked, "plan-2"))
    result = waiter.wait(0)
    assert result is not None and acked == ["plan-2"]
    with pytest.raises(AgentError) as caught:
        decode_result(result)
    assert str(caught.value).startswith(
        "the agent's result could not be read: result on results-hostile: ")
    assert "larger than 16777216 bytes" in str(caught.value)
