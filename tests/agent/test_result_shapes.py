"""Result messages as murano-agent sends them (same v2 plans to both agents): ``Time`` in
UTC, ``ReplyTo`` on a run plan's result, null for a script's empty output; and the
documented extension: a plan with a stale ``Stamp`` is answered with an error at once.
"""

from __future__ import annotations

import datetime
import json
import time
import uuid

import pytest
from agent_harness import publish_raw

from murano_engine.messaging import AgentError

RUN_KEYS = {"FormatVersion", "ID", "SourceID", "Action", "ErrorCode", "Body", "Time", "ReplyTo"}


def _plan(client, script: str, body: str = "r = run()\nreturn [r.stdout, r.stderr]",
          **fields) -> dict:
    plan = client.build_plan(
        {"FormatVersion": "2.1.0", "Body": body,
         "Scripts": {"run": {"Type": "Application", "EntryPoint": "run.sh"}}},
        lambda name: script.encode(),
    )
    plan.update(fields)
    return plan


def _send(queue: str, plan: dict, reply_to: str | None = None) -> None:
    publish_raw(queue, json.dumps(plan), plan.get("ID") or uuid.uuid4().hex, reply_to=reply_to)


def _utc(text: str) -> datetime.datetime:
    """murano-agent's ``str(utcnow())``: ``YYYY-MM-DD HH:MM:SS[.ffffff]``, no zone."""
    assert "T" not in text and "+" not in text, text
    return datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.UTC)


def test_results_are_shaped_as_murano_agents(client, make_agent, reader):
    """An agent in Tokyo time stamps results in UTC; results of run plans carry ReplyTo
    (null without one); empty output is null, whitespace-only output an empty string."""
    agent = make_agent(result_queue=reader.queue, env={"TZ": "Asia/Tokyo"})
    agent.wait_log("connected; consuming")
    quiet = _plan(client, "#!/bin/sh\nprintf '  \\n' >&2\n")
    _send(agent.queue, quiet)
    message_id, result = reader.get(20)
    now = datetime.datetime.now(datetime.UTC)
    assert message_id == quiet["ID"]
    assert set(result) == RUN_KEYS, result
    assert result["SourceID"] == quiet["ID"] and result["ErrorCode"] == 0
    assert result["ReplyTo"] is None
    assert result["Body"] == [None, ""]
    assert abs(now - _utc(result["Time"])) < datetime.timedelta(minutes=1), result["Time"]

    addressed = _plan(client, "#!/bin/sh\necho out\n", ReplyTo="their-queue")
    _send(agent.queue, addressed)
    assert reader.get(20)[1]["ReplyTo"] == "their-queue"
    by_property = _plan(client, "#!/bin/sh\necho out\n")
    _send(agent.queue, by_property, reply_to="amqp-reply-queue")
    assert reader.get(20)[1]["ReplyTo"] == "amqp-reply-queue"

    failing = _plan(client, "#!/bin/sh\nexit 3\n", body="return run().stdout")
    _send(agent.queue, failing)
    result = reader.get(20)[1]
    assert set(result) == RUN_KEYS and result["ReplyTo"] is None
    assert result["ErrorCode"] == 100
    assert result["Body"]["AdditionalInfo"] == {"exitCode": 3, "stdout": None, "stderr": None}

    # a plan refused as invalid never ran: no ReplyTo, as murano-agent's validation error
    invalid = {"FormatVersion": "2.0.0", "ID": uuid.uuid4().hex, "Body": "return 1"}
    _send(agent.queue, invalid)
    result = reader.get(20)[1]
    assert set(result) == RUN_KEYS - {"ReplyTo"}
    assert result["ErrorCode"] == 2 and "Scripts" in result["Body"]["Message"]


def test_a_dynamic_result_queue_routes_by_reply_to_and_leaves_it_out(client, make_agent,
                                                                     reader):
    agent = make_agent(result_queue="nobody-reads-this",
                       extra="enable_dynamic_result_queue = true")
    agent.wait_log("connected; consuming")
    plan = _plan(client, "#!/bin/sh\necho routed\n", ReplyTo=reader.queue)
    _send(agent.queue, plan)
    message_id, result = reader.get(20)
    assert message_id == plan["ID"] and result["Body"] == ["routed", None]
    assert set(result) == RUN_KEYS - {"ReplyTo"}


def test_the_engine_decodes_null_output(client, make_agent):
    agent = make_agent(client)
    plan = _plan(client, "#!/bin/sh\ntrue\n", body="return run()")
    assert client.call(agent.queue, plan, 20) == {"exitCode": 0, "stdout": None, "stderr": None}
    failing = _plan(client, "#!/bin/sh\nexit 4\n", body="return run()")
    with pytest.raises(AgentError) as caught:
        client.call(agent.queue, failing, 20)
    assert caught.value.error_code == 100
    assert caught.value.details == {"exitCode": 4, "stdout": None, "stderr": None}


def test_a_plan_with_a_stale_stamp_is_answered_with_an_error(client, make_agent, reader,
                                                            tmp_path):
    """murano-agent drops it and the engine waits out its timeout; this agent answers.

    The agent accepted a plan stamped far ahead (an engine whose clock ran ahead); the
    engine's next plan has a smaller stamp.
    """
    agent = make_agent(client)
    ahead = _plan(client, "#!/bin/sh\necho ahead\n", Stamp=10**18)
    _send(agent.queue, ahead)
    agent.wait_log(f"plan {ahead['ID']} finished")
    marker = tmp_path / "ran"
    stale = _plan(client, f"#!/bin/sh\ntouch {marker}\n")
    started = time.monotonic()
    with pytest.raises(AgentError) as caught:
        client.call(agent.queue, stale, 60)
    assert time.monotonic() - started < 10, "answered, not waited out"
    assert caught.value.error_code == 2
    assert caught.value.message.startswith("replayed or stale plan: Stamp ")
    assert caught.value.message.endswith(f" <= last accepted {10**18}")
    assert not marker.exists(), "a stale plan never runs"
