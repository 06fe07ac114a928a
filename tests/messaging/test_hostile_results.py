"""Results come from guests, which run tenants' code: a hostile one is dropped, not fatal."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

from murano_engine.messaging.listener import ResultListener


def _message(body: str | bytes, message_id: str = "") -> SimpleNamespace:
    return SimpleNamespace(body=body, properties={"message_id": message_id})


def test_deep_huge_or_broken_results_are_dropped_and_the_listener_goes_on(caplog):
    listener = ResultListener("memory://", "results-hostile")
    waiter = listener.subscribe("plan-1")
    with caplog.at_level(logging.WARNING):
        for body in ("[" * 100_000, b"\xff\xfe{", "{'not': json}", "x" * (17 * 1024 * 1024)):
            listener._on_message(_message(body, "plan-1"))
    assert waiter.wait(0) is None
    assert len([r for r in caplog.records if "dropping undecodable result" in r.message]) == 4
    assert any("nested deeper" in r.message for r in caplog.records)

    listener._on_message(_message(json.dumps({"SourceID": "plan-1", "Result": 42})))
    assert waiter.wait(1) == {"SourceID": "plan-1", "Result": 42}
