"""Broker connection cuts mid-deployment (issue 12 item 7): no plan and no result is lost.

The engine's client and the agents reach the real RabbitMQ through TCP forwarders on
loopback (tests/tcp_forwarder.py); a test cuts them and restores them, the broker
itself keeps running. Each plan's script notes its token in a log file, so "ran exactly
once" is read from the file.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import kombu
import pytest
from agent_harness import AMQP_URL, delete_queues, publish_raw, require_broker, unique
from tcp_forwarder import TcpForwarder

from murano_engine.messaging import AgentClient, AgentTimeout
from murano_engine.messaging.listener import ResultListener

SCRIPT = b'#!/bin/sh\necho "$1" >> "$3"\nsleep "$2"\necho "ran $1"\n'
SCRIPT_PLAN = {
    "FormatVersion": "2.0.0",
    "Body": "return run(args.commandline).stdout",
    "Scripts": {"run": {"Type": "Application", "EntryPoint": "note.sh"}},
}


@pytest.fixture
def forwarder():
    require_broker()
    with TcpForwarder(5672) as made:
        yield made


@pytest.fixture
def make_cut_client():
    """Engine clients whose broker URL goes through a given forwarder."""
    made: list[AgentClient] = []

    def make(forwarder: TcpForwarder) -> AgentClient:
        client = AgentClient(forwarder.rewrite(AMQP_URL), region=unique("cut-"))
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
    delete_queues([client.result_queue for client in made])


class ScriptLog:
    """The file the plans' scripts append their tokens to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.touch()

    def plan(self, client: AgentClient, token: str, seconds: float) -> dict:
        parameters = {"commandline": f"{token} {seconds} {self.path}"}
        return client.build_plan(dict(SCRIPT_PLAN, Parameters=parameters), lambda name: SCRIPT)

    def tokens(self) -> list[str]:
        return self.path.read_text().split()

    def wait_for(self, count: int, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while len(self.tokens()) < count:
            assert time.monotonic() < deadline, f"scripts noted {self.tokens()}"
            time.sleep(0.02)


@pytest.fixture
def script_log(tmp_path):
    return ScriptLog(tmp_path / "ran.log")


class Calls:
    """``client.call`` in background threads; the answers (or exceptions) by token."""

    def __init__(self) -> None:
        self.answers: dict[str, object] = {}
        self._threads: list[threading.Thread] = []

    def start(self, client: AgentClient, queue: str, plan: dict, token: str, timeout: float):
        def run() -> None:
            try:
                self.answers[token] = client.call(queue, plan, timeout)
            except Exception as exc:  # the test looks at it
                self.answers[token] = exc

        thread = threading.Thread(target=run, name=f"call {token}")
        thread.start()
        self._threads.append(thread)

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        assert not any(thread.is_alive() for thread in self._threads), "a call hangs"


def logged(caplog, logger: str, text: str) -> int:
    return sum(1 for r in caplog.records if r.name == logger and text in r.getMessage())


def queue_depth(name: str) -> int:
    """Messages ready on a queue (neither delivered unacked nor consumed)."""
    with kombu.Connection(AMQP_URL, connect_timeout=3) as conn:
        return conn.default_channel.queue_declare(name, passive=True).message_count


def test_cut_while_plans_are_in_flight(forwarder, make_cut_client, make_agent, script_log, caplog):
    caplog.set_level(logging.INFO)
    client = make_cut_client(forwarder)
    agents = [make_agent(client, port=forwarder.port) for _ in range(2)]
    calls = Calls()
    tokens = [f"t{number}" for number in range(6)]
    for number, token in enumerate(tokens):
        agent = agents[number % 2]
        calls.start(client, agent.queue, script_log.plan(client, token, 0.6), token, 40)
    script_log.wait_for(1)  # scripts are running, more plans are queued behind them
    assert forwarder.cut() >= 4  # the engine's listener and publisher, and two agents
    time.sleep(1.5)
    forwarder.restore()
    calls.join(40)

    assert calls.answers == {token: f"ran {token}" for token in tokens}
    assert sorted(script_log.tokens()) == tokens  # every script ran, and once
    # the listener came back once and asked again for the results still awaited; each
    # agent answered those repeats from its store or ignored them (no second run)
    listener = f"results {client.result_queue}"
    assert logged(caplog, "murano_common.amqp", f"{listener}: broker connection lost") == 1
    assert logged(caplog, "murano_common.amqp", f"{listener}: broker connection back") == 1
    deadline = time.monotonic() + 10  # an agent may see the repeats after its results left
    while not any(
        "already queued; ignoring" in agent.log() or "already ran; answering" in agent.log()
        for agent in agents
    ):
        assert time.monotonic() < deadline, "no plan was published again"
        time.sleep(0.05)
    assert sorted(script_log.tokens()) == tokens
    for agent in agents:
        assert agent.log().count("broker connection lost or refused") == 1


def test_publish_waits_for_the_broker_to_come_back(
    forwarder, make_cut_client, make_agent, script_log, caplog
):
    caplog.set_level(logging.INFO)
    client = make_cut_client(forwarder)
    agent = make_agent(client, port=forwarder.port)
    forwarder.cut()  # the client's publishing connection dies idle
    calls = Calls()
    calls.start(client, agent.queue, script_log.plan(client, "late", 0), "late", 30)
    time.sleep(1.5)
    assert calls.answers == {} and script_log.tokens() == []
    refused_before = forwarder.refused
    forwarder.restore()
    calls.join(30)

    assert calls.answers == {"late": "ran late"}
    assert script_log.tokens() == ["late"]
    assert refused_before >= 3  # it kept trying while cut (listener, agent and publisher)
    client_log = "murano_engine.messaging.client"
    assert logged(caplog, client_log, "cannot publish") == 1  # once per cut, not per try
    assert logged(caplog, client_log, "publishing again after") == 1


def test_cut_longer_than_the_timeout_times_out_cleanly(
    forwarder, make_cut_client, make_agent, script_log
):
    client = make_cut_client(forwarder)
    agent = make_agent(client, port=forwarder.port)
    forwarder.cut()
    started = time.monotonic()
    with pytest.raises(AgentTimeout) as caught:
        client.call(agent.queue, script_log.plan(client, "never", 0), 1.5)
    assert 1.5 <= time.monotonic() - started < 3
    assert "the broker did not take the plan" in caught.value.info["details"]["reason"]

    forwarder.restore()
    assert client.call(agent.queue, script_log.plan(client, "after", 0), 20) == "ran after"
    forwarder.cut()
    started = time.monotonic()
    with pytest.raises(OSError, match="cannot publish"):
        client.send(agent.queue, script_log.plan(client, "never-sent", 0), timeout=0.8)
    assert 0.8 <= time.monotonic() - started < 2.5
    forwarder.restore()
    assert script_log.tokens() == ["after"]  # the plans that timed out were never sent


def test_the_broker_is_waited_for_once_per_outage(
    forwarder, make_cut_client, make_agent, script_log
):
    """A call that gave up on an unreachable broker ends the waiting: the next plans of
    the same outage try once (a destroy's stop plans, one per server, each waited the
    whole timeout); a publish that gets through starts the waiting afresh."""
    client = make_cut_client(forwarder)
    agent = make_agent(client, port=forwarder.port)
    forwarder.cut()
    with pytest.raises(AgentTimeout):
        client.call(agent.queue, script_log.plan(client, "first", 0), 1.0)
    started = time.monotonic()
    with pytest.raises(AgentTimeout) as caught:
        client.call(agent.queue, script_log.plan(client, "second", 0), 30)
    assert time.monotonic() - started < 1.0
    reason = caught.value.info["details"]["reason"]
    assert "the broker did not take the plan" in reason and "waited for once already" in reason
    with pytest.raises(OSError, match="waited for once already"):
        client.send(agent.queue, script_log.plan(client, "third", 0), timeout=30)

    forwarder.restore()
    assert client.call(agent.queue, script_log.plan(client, "back", 0), 20) == "ran back"
    forwarder.cut()  # a new outage: waited for again, until the call's time is up
    started = time.monotonic()
    with pytest.raises(AgentTimeout):
        client.call(agent.queue, script_log.plan(client, "later", 0), 1.5)
    assert 1.5 <= time.monotonic() - started < 3
    forwarder.restore()
    assert script_log.tokens() == ["back"]


def test_result_lost_in_a_cut_is_asked_for_again(make_cut_client, make_agent, script_log):
    """Only the engine's connections are cut; the agent's result is published meanwhile
    and lost (purged); the engine publishes the plan again once its listener is back,
    and the agent answers from its store."""
    require_broker()
    with TcpForwarder(5672) as engine_side, TcpForwarder(5672) as agent_side:
        client = make_cut_client(engine_side)
        agent = make_agent(client, port=agent_side.port)
        plan = script_log.plan(client, "once", 0.3)
        calls = Calls()
        calls.start(client, agent.queue, plan, "once", 30)
        agent.wait_log(f"running plan {plan['ID']}")
        engine_side.cut()
        agent.wait_log(f"plan {plan['ID']} finished")
        deadline = time.monotonic() + 10
        while queue_depth(client.result_queue) != 1:
            assert time.monotonic() < deadline, "the agent's result never reached the queue"
            time.sleep(0.02)
        with kombu.Connection(AMQP_URL, connect_timeout=3) as conn:
            conn.default_channel.queue_purge(client.result_queue)  # the result is lost
        engine_side.restore()
        calls.join(30)

    assert calls.answers == {"once": "ran once"}
    assert script_log.tokens() == ["once"]
    agent.wait_log(f"plan {plan['ID']} already ran; answering with its stored result")


def test_listener_acks_results_only_once_handed_over(forwarder):
    queue = unique("-execution-results-cut-")
    with kombu.Connection(AMQP_URL, connect_timeout=3) as conn:
        amqp_queue = kombu.Queue(queue, durable=True, queue_arguments={"x-expires": 86_400_000})
        amqp_queue(conn.default_channel).declare()
    listener = ResultListener(forwarder.rewrite(AMQP_URL), queue)
    try:
        waiters = {f"plan-{n}": listener.subscribe(f"plan-{n}") for n in range(5)}
        listener.start()
        forwarder.wait_links(1)
        publish_raw(queue, '{"SourceID": "warm-up"}', "warm-up")  # nobody waits: dropped
        deadline = time.monotonic() + 10
        while queue_depth(queue) != 0:
            assert time.monotonic() < deadline, "the listener does not consume"
            time.sleep(0.02)
        assert forwarder.hold() == 1  # results reach the listener's socket, not the listener
        for plan_id in waiters:
            publish_raw(queue, f'{{"SourceID": "{plan_id}", "Result": "{plan_id}"}}', plan_id)
        publish_raw(queue, '{"SourceID": "orphan"}', "orphan")
        while queue_depth(queue) != 0:  # the broker handed all of them over
            assert time.monotonic() < deadline, "the broker kept the results"
            time.sleep(0.02)
        time.sleep(0.2)
        assert all(waiter.wait(0) is None for waiter in waiters.values())
        forwarder.cut()  # the delivered, unprocessed results die with the connection
        time.sleep(0.5)
        forwarder.restore()
        for plan_id, waiter in waiters.items():
            assert waiter.wait(10) == {"SourceID": plan_id, "Result": plan_id}
    finally:
        listener.stop()
    # the ones nobody waited for were dropped for good: acked, not back on the queue
    assert queue_depth(queue) == 0
    delete_queues([queue])
