"""AgentClient against the real RabbitMQ: timeouts, correlation, dropped connections."""

from __future__ import annotations

import threading
import time
import uuid

import kombu
import kombu.exceptions
import pytest
from agent_harness import (
    AMQP_URL,
    close_broker_connections,
    delete_queues,
    publish_raw,
    unique,
)

from murano_common import amqp
from murano_engine.messaging import AgentClient, AgentError, AgentTimeout

SLEEPER = {
    "FormatVersion": "2.0.0",
    "Body": "return run(args.seconds).stdout",
    "Scripts": {"run": {"Type": "Application", "EntryPoint": "run.sh"}},
}


def sleeper(client: AgentClient, seconds: float) -> dict:
    template = dict(SLEEPER, Parameters={"seconds": str(seconds)})
    return client.build_plan(template, lambda name: b"#!/bin/sh\nsleep $1\necho slept $1\n")


def test_names_follow_murano():
    assert AgentClient.queue_name("ENV1", "Host2") == "eenv1-hhost2"
    assert AgentClient("memory://", region="RegionOne-abc").result_queue == (
        "-execution-results-regionone-abc"
    )


def test_call_without_an_agent_times_out(client):
    queue = client.queue_name(unique("e"), unique("h"))
    started = time.monotonic()
    with pytest.raises(AgentTimeout) as caught:
        client.call(queue, sleeper(client, 0), 0.4)
    assert 0.4 <= time.monotonic() - started < 2
    assert isinstance(caught.value, TimeoutError) and isinstance(caught.value, AgentError)
    assert "did not respond within 0.4 seconds" in str(caught.value)
    assert client.is_ready(queue, 0.3) is False
    delete_queues([queue])


def test_concurrent_calls_each_get_their_own_result(client, make_agent):
    agents = [make_agent(client), make_agent(client)]
    answers: dict[int, object] = {}

    def call(index: int, seconds: float) -> None:
        answers[index] = client.call(agents[index].queue, sleeper(client, seconds), 10)

    threads = [
        threading.Thread(target=call, args=(0, 0.6)),
        threading.Thread(target=call, args=(1, 0.1)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == {0: "slept 0.6", 1: "slept 0.1"}


def test_v1_style_result_is_matched_by_message_id(client, make_agent):
    agent = make_agent(client, extra="powershell = absent-powershell")
    with pytest.raises(AgentError) as caught:
        client.call(agent.queue, {"Commands": [], "Scripts": []}, 10)
    assert caught.value.info["source"] == "execution_plan"


def test_results_nobody_waits_for_are_dropped(client, make_agent):
    agent = make_agent(client)
    client.send(agent.queue, sleeper(client, 0))  # its result arrives with no waiter
    publish_raw(client.result_queue, "not json", "junk")  # and junk on the result queue
    assert client.call(agent.queue, sleeper(client, 0.05), 10) == "slept 0.05"


def test_engine_survives_dropped_connections(client, make_agent):
    agent = make_agent(client)
    assert close_broker_connections(client.result_queue) == 2  # listener and publisher
    assert client.call(agent.queue, sleeper(client, 0), 20) == "slept 0"


def _queue_exists(name: str) -> bool:
    with kombu.Connection(AMQP_URL, connect_timeout=3) as conn:
        try:
            conn.default_channel.queue_declare(name, passive=True)
        except kombu.exceptions.ChannelError:
            return False
    return True


@pytest.mark.parametrize("let_go", [True, False])
def test_a_task_lets_go_of_its_regions_so_another_process_deletion_stays(let_go: bool):
    """Workers met this: one deployed an environment and kept listening on its region's
    result queue; another deleted the environment and its queue; the first one's listener
    declared it again, and it outlived the environment. A task now ends with let_go."""
    environment = uuid.uuid4().hex
    region = amqp.environment_region(environment, "stack")
    queue = amqp.result_queue_name(region)
    deployer = AgentClient(AMQP_URL)
    try:
        deployer.for_region(region).listen()
        deadline = time.monotonic() + 10
        while not _queue_exists(queue):
            assert time.monotonic() < deadline, "the region's listener declared nothing"
            time.sleep(0.1)
        if let_go:
            deployer.let_go(environment)
        AgentClient(AMQP_URL).remove_region(region)  # the deleting process's last act
        time.sleep(3)  # (a listener kept reconnects within a second or two)
        assert _queue_exists(queue) is (not let_go)
    finally:
        deployer.close()
        delete_queues([queue])
