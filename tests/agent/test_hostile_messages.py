"""The agent survives any message: malformed, deep, oversized or poisonous input and
hostile plan Bodies each end in one error result, and the next good plan still runs."""

from __future__ import annotations

import hashlib
import json
import uuid

import kombu
import pytest
from agent_harness import AMQP_URL, publish_raw

from murano_agent.plans import MAX_DEPTH
from murano_agent.storage import PlanStore
from murano_engine.messaging import AgentError


def good_plan(answer: str) -> dict:
    """A plan with no scripts whose Body returns ``answer``."""
    return {
        "FormatVersion": "2.0.0",
        "ID": uuid.uuid4().hex,
        "Body": f"return {answer!r}",
        "Scripts": {},
        "Files": {},
    }


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def expect_still_serving(agent, reader) -> None:
    """The agent answers a good plan next, and nothing else is (re)delivered."""
    plan = good_plan("still serving")
    publish_raw(agent.queue, json.dumps(plan), message_id=plan["ID"])
    message_id, result = reader.get()
    assert (message_id, result["ErrorCode"], result["Body"]) == (plan["ID"], 0, "still serving")
    assert reader.empty(0.5), "a refused message was answered twice"
    assert agent.proc.poll() is None


def test_deep_oversized_and_unreadable_messages_are_answered_once(make_agent, reader):
    agent = make_agent(result_queue=reader.queue, extra="max_message_bytes = 100000")
    agent.wait_log("connected; consuming")
    deep_but_parsable = good_plan("x")
    deep_but_parsable["Parameters"] = {"p": json.loads(nested(MAX_DEPTH + 5))}
    messages = {
        "m-brackets": "[" * 100_000,
        "m-deep-list": nested(40_000),
        "m-deep-parameters": json.dumps(deep_but_parsable),
        "m-oversized": json.dumps(dict(good_plan("x"), Body="#" * 100_001)),
    }
    for message_id, body in messages.items():
        publish_raw(agent.queue, body, message_id=message_id)
    answers = dict(reader.get() for _ in messages)
    assert set(answers) == set(messages)
    for message_id in ("m-brackets", "m-deep-list", "m-deep-parameters"):
        body = answers[message_id]
        assert body["SourceID"] == message_id and body["ErrorCode"] == 2
        assert body["Body"]["Message"] == f"message body nests deeper than {MAX_DEPTH} levels"
    oversized = answers["m-oversized"]["Body"]["Message"]
    assert "more than the 100000 allowed (agent setting [DEFAULT] max_message_bytes)" in oversized
    expect_still_serving(agent, reader)


def test_plan_ids_and_reply_queues_a_result_cannot_carry_are_refused(make_agent, reader):
    agent = make_agent(result_queue=reader.queue)
    agent.wait_log("connected; consuming")
    refused = {
        "m-long-id": (dict(good_plan("x"), ID="i" * 256), "plan ID 'iiii"),
        "m-list-id": (dict(good_plan("x"), ID=["a"]), "plan ID ['a']"),
        "m-surrogate-id": (dict(good_plan("x"), ID="\ud800"), "plan ID '\\ud800'"),
        "m-reply-to": (dict(good_plan("x"), ReplyTo={"q": 1}), "plan ReplyTo {'q': 1}"),
    }
    for message_id, (plan, _) in refused.items():
        publish_raw(agent.queue, json.dumps(plan), message_id=message_id)
    answers = dict(reader.get() for _ in refused)
    for message_id, (_, start) in refused.items():
        text = answers[message_id]["Body"]["Message"]
        assert answers[message_id]["ErrorCode"] == 2
        assert text.startswith(start) and text.endswith(" is not a string of at most 255 bytes")
    expect_still_serving(agent, reader)


def test_message_with_no_id_to_answer_is_dropped_with_a_log_line(make_agent, reader):
    agent = make_agent(result_queue=reader.queue)
    agent.wait_log("connected; consuming")
    publish_raw(agent.queue, nested(50_000), message_id=None)
    agent.wait_log(f"dropped a message with no ID to answer to: message body nests deeper than "
                   f"{MAX_DEPTH} levels")
    expect_still_serving(agent, reader)


def test_deep_header_table_is_read_and_the_plan_runs(make_agent, reader):
    agent = make_agent(result_queue=reader.queue)
    agent.wait_log("connected; consuming")
    table: dict = {}
    for _ in range(15_000):  # about 100 kB: what a broker's default 128 kB frame holds
        table = {"a": table}
    plan = good_plan("deep headers")
    publish_raw(agent.queue, json.dumps(plan), message_id=plan["ID"], headers={"x": table})
    message_id, result = reader.get()
    assert (message_id, result["Body"]) == (plan["ID"], "deep headers")
    expect_still_serving(agent, reader)


def take_back_unacked(queue: str) -> None:
    """Take the next message of ``queue`` without acking it and disconnect, as an agent
    dying while reading it does: the broker delivers it again, marked redelivered."""
    with kombu.Connection(AMQP_URL, connect_timeout=3) as conn:
        assert conn.default_channel.basic_get(queue, no_ack=False) is not None


def test_message_the_agent_kept_dying_on_is_answered_unread(make_agent, reader):
    agent = make_agent(result_queue=reader.queue)
    agent.wait_log("connected; consuming")
    agent.stop()
    poison = good_plan("never run")
    body = json.dumps(poison).encode()
    store = PlanStore(agent.folder / "storage")  # as three agents that died reading it left it
    for _ in range(3):
        store.redelivered(hashlib.sha256(body).hexdigest())
    store.close()
    publish_raw(agent.queue, body, message_id="m-poison")
    take_back_unacked(agent.queue)
    once = good_plan("redelivered once")  # an ordinary redelivery (lost connection) still runs
    publish_raw(agent.queue, json.dumps(once), message_id=once["ID"])
    take_back_unacked(agent.queue)
    agent.start()
    message_id, result = reader.get(20)
    assert message_id == "m-poison" and result["ErrorCode"] == 1
    assert result["Body"]["Message"] == (
        "message arrived 4 times and the agent stopped while reading it each time before; "
        "it is not read again"
    )
    message_id, result = reader.get(20)
    assert (message_id, result["Body"]) == (once["ID"], "redelivered once")
    assert f"plan {poison['ID']}" not in agent.log()
    expect_still_serving(agent, reader)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("raise SystemExit(3)", "plan Body raised SystemExit: 3"),
        ("import sys\nsys.exit('bye')", "plan Body raised SystemExit: bye"),
        ("raise KeyboardInterrupt", "plan Body raised KeyboardInterrupt"),
        ("raise GeneratorExit('g')", "plan Body raised GeneratorExit: g"),
        (
            "class Odd(BaseException):\n    def __str__(self):\n        raise SystemExit(1)\n"
            "raise Odd()",
            "plan Body raised Odd: <message cannot be shown>",
        ),
        ("def f(): return f()\nreturn f()", "plan Body raised RecursionError: maximum recursion"),
    ],
)
def test_whatever_a_body_raises_is_an_error_result(client, make_agent, body, message):
    agent = make_agent(client)
    with pytest.raises(AgentError) as caught:
        client.call(agent.queue, dict(good_plan("x"), Body=body), 10)
    assert caught.value.error_code == 1
    assert caught.value.message.startswith(message)
    assert client.call(agent.queue, good_plan("next"), 10) == "next"
    assert agent.proc.poll() is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("a = []\na.append(a)\nreturn a", "the plan Body returned a value that is not JSON: "
                                          "Circular reference detected"),
        (
            "v = []\nfor _ in range(200_000):\n    v = [v]\nreturn v",
            "the plan Body returned a value that is not JSON: maximum recursion depth",
        ),
        (
            f"v = 1\nfor _ in range({MAX_DEPTH + 1}):\n    v = [v]\nreturn v",
            f"the value the plan Body returned nests deeper than {MAX_DEPTH} levels",
        ),
    ],
)
def test_a_body_value_that_cannot_be_sent_is_an_error_result(client, make_agent, body, message):
    agent = make_agent(client)
    with pytest.raises(AgentError) as caught:
        client.call(agent.queue, dict(good_plan("x"), Body=body), 10)
    assert caught.value.error_code == 2
    assert caught.value.message.startswith(message)
    assert client.call(agent.queue, good_plan("next"), 10) == "next"


def script_plan(client, scripts: dict[str, str], body: str) -> dict:
    """A v2 plan of Application scripts ``name -> shell text`` (entry point ``<name>.sh``)."""
    template = {
        "FormatVersion": "2.1.0",
        "Body": body,
        "Scripts": {name: {"Type": "Application", "EntryPoint": f"{name}.sh"} for name in scripts},
    }
    files = {f"{name}.sh": text.encode() for name, text in scripts.items()}
    return client.build_plan(template, lambda name: files[name])


def test_script_names_and_links_cannot_lead_files_out_of_the_work_folder(
    client, make_agent, tmp_path
):
    agent = make_agent(client)
    storage = agent.folder / "storage"
    for key, problem in (
        ("../..", "script name '../..' escapes the agent's work folder"),
        ("..", "script name '..' escapes the agent's work folder"),
        ("/tmp", "script name '/tmp' escapes the agent's work folder"),
        ("a/b", "script name 'a/b' is not a single folder name"),
        (".", "script name '.' is not a single folder name"),
    ):
        plan = script_plan(client, {"run": "#!/bin/sh\necho out\n"}, f"return globals()[{key!r}]()")
        plan["Scripts"][key] = plan["Scripts"].pop("run")
        with pytest.raises(AgentError) as caught:
            client.call(agent.queue, plan, 10)
        assert caught.value.error_code == 2
        assert caught.value.message == f"Scripts.{key}: {problem}"
    assert not list(storage.glob("run.sh")) and not list(agent.folder.glob("run.sh"))
    # a script that turns another script's folder into a link leading out
    outside = tmp_path / "outside"
    outside.mkdir()
    plan = script_plan(
        client,
        {"a": f"#!/bin/sh\nln -s {outside} ../b\n", "b": "#!/bin/sh\necho b\n"},
        "a()\nreturn b().stdout",
    )
    with pytest.raises(AgentError) as caught:
        client.call(agent.queue, plan, 10)
    assert caught.value.error_code == 2
    entry_id = plan["Scripts"]["b"]["EntryPoint"]
    assert caught.value.message.startswith(f"Files.{entry_id}: folder ")
    assert caught.value.message.endswith("escapes the work folder")
    assert list(outside.iterdir()) == []
    good = script_plan(client, {"run": "#!/bin/sh\necho fine\n"}, "return run().stdout")
    assert client.call(agent.queue, good, 10) == "fine"
