"""Agents embedded in the engine's process: memory:// transport, plain and green threads."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from agent_harness import AMQP_URL, delete_queues, unique

from murano_agent.config import load_config
from murano_agent.service import AgentService
from murano_engine.messaging import AgentClient, AgentError

AGENT_INI = """[DEFAULT]
plan_timeout = 5
[rabbitmq]
url = memory://
"""

SCRIPT_TEMPLATE = {
    "FormatVersion": "2.0.0",
    "Body": "return run(args.n).stdout",
    "Parameters": {"n": "7"},
    "Scripts": {"run": {"Type": "Application", "EntryPoint": "run.sh"}},
}


def test_memory_transport_with_plain_threads(tmp_path):
    client = AgentClient("memory://", region=unique("mem-"))
    queue = client.queue_name("env", unique("h"))
    cfg = load_config(
        AGENT_INI,
        {
            "storage": tmp_path,
            "rabbitmq.input_queue": queue,
            "rabbitmq.result_routing_key": client.result_queue,
        },
    )
    service = AgentService(cfg)
    service.start()
    try:
        plan = client.build_plan(SCRIPT_TEMPLATE, lambda name: b"#!/bin/sh\necho $(($1 * 6))\n")
        assert client.call(queue, plan, 10) == "42"
        try:
            client.call(queue, dict(plan, ID="x", FormatVersion="7"), 10)
        except AgentError as exc:
            assert exc.error_code == 9
        else:
            raise AssertionError("an unknown format version must give an error result")
        assert client.is_ready(queue, 5)
    finally:
        service.stop()
        client.close()
    assert not any(t.name.startswith("murano-agent") for t in threading.enumerate())


GREEN_PROGRAM = textwrap.dedent(
    """
    import json, sys, tempfile
    from murano_engine.dsl import concurrency
    concurrency.setup()
    from murano_agent.config import load_config
    from murano_agent.service import AgentService
    from murano_engine.messaging import AgentClient

    url, region, root, queues = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    client = AgentClient(url, region=region)
    services = []
    for queue in queues:
        cfg = load_config(
            "[DEFAULT]\\nplan_timeout = 5\\n[rabbitmq]\\n",
            {"storage": tempfile.mkdtemp(dir=root), "rabbitmq.url": url,
             "rabbitmq.input_queue": queue, "rabbitmq.result_routing_key": client.result_queue},
        )
        services.append(AgentService(cfg))
        services[-1].start()
    template = {"FormatVersion": "2.0.0", "Body": "return run().stdout",
                "Scripts": {"run": {"Type": "Application", "EntryPoint": "run.sh"}}}
    script = lambda name: b"#!/bin/sh\\ndate +%s.%N\\nsleep 0.3\\ndate +%s.%N\\n"
    results = concurrency.run_all(
        [lambda q=q: client.call(q, client.build_plan(template, script), 10) for q in queues]
    )
    for service in services:
        service.stop()
    client.close()
    print(json.dumps({"results": results}))
    """
)


def run_green(url: str, root: Path) -> dict:
    region = unique("green-")
    queues = [f"e{unique('')}-h{unique('')}" for _ in range(3)]
    try:
        done = subprocess.run(
            [sys.executable, "-c", GREEN_PROGRAM, url, region, str(root), *queues],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        if url.startswith("amqp"):
            delete_queues([*queues, f"-execution-results-{region}"])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def ran_side_by_side(outcome: dict) -> bool:
    """Each of the three scripts started before any of them ended."""
    spans = [[float(t) for t in r.split()] for r in outcome["results"]]
    assert len(spans) == 3 and all(len(span) == 2 for span in spans)
    return max(start for start, _ in spans) < min(end for _, end in spans)


def test_agents_and_engine_under_eventlet_monkey_patching_memory(tmp_path):
    # three agents ran their 0.3 s scripts at the same time: green threads do not block
    assert ran_side_by_side(run_green("memory://", tmp_path))


def test_agents_and_engine_under_eventlet_monkey_patching_rabbitmq(tmp_path):
    assert ran_side_by_side(run_green(AMQP_URL, tmp_path))
