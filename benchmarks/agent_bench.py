"""Agent throughput and engine round-trip latency over the real RabbitMQ.

Starts one ``murano-agent`` process, then measures, for two kinds of no-op plan:
* plans per second through it (many calls in flight);
* the median round trip of one ``AgentClient.call`` at a time.
The kinds: ``body`` (the plan's Body does nothing, like the readiness ping) and
``script`` (the Body runs a no-op shell script: a process per plan).
Targets: 200 no-op plans/s, median round trip under 15 ms.

    python benchmarks/agent_bench.py [--url amqp://guest:guest@127.0.0.1:5672//] [--plans 600]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import kombu

from murano_engine.messaging import AgentClient

KINDS = {
    "body": {"FormatVersion": "2.0.0", "Body": "return 0", "Scripts": {}},
    "script": {
        "FormatVersion": "2.0.0",
        "Body": "return run().exitCode",
        "Scripts": {"run": {"Type": "Application", "EntryPoint": "noop.sh"}},
    },
}


def start_agent(folder: Path, url: str, queue: str, result_queue: str) -> subprocess.Popen:
    config = folder / "agent.conf"
    config.write_text(
        f"[DEFAULT]\nstorage = {folder / 'storage'}\nlog_file = {folder / 'agent.log'}\n"
        f"[rabbitmq]\nurl = {url}\ninput_queue = {queue}\nresult_routing_key = {result_queue}\n"
    )
    return subprocess.Popen(
        [sys.executable, "-m", "murano_agent.cli", "--config-file", str(config)],
        stdout=subprocess.DEVNULL,
    )


def measure(client: AgentClient, queue: str, kind: str, plans: int, samples: int) -> tuple:
    """(kind, plans/s, plans, seconds, median ms, p95 ms) for one kind of no-op plan."""

    def call() -> object:
        plan = client.build_plan(KINDS[kind], lambda name: b"#!/bin/sh\nexit 0\n")
        return client.call(queue, plan, 60)

    for _ in range(20):
        call()  # warm-up
    started = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(lambda _: call(), range(plans)))
    elapsed = time.perf_counter() - started
    assert outcomes == [0] * plans
    latencies = []
    for _ in range(samples):
        begin = time.perf_counter()
        call()
        latencies.append((time.perf_counter() - begin) * 1000)
    median = statistics.median(latencies)
    p95 = statistics.quantiles(latencies, n=20)[-1]
    return kind, plans / elapsed, plans, elapsed, median, p95


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="amqp://guest:guest@127.0.0.1:5672//")
    parser.add_argument("--plans", type=int, default=600, help="plans for the throughput run")
    parser.add_argument("--samples", type=int, default=200, help="sequential calls for latency")
    args = parser.parse_args()

    client = AgentClient(args.url, region=f"bench-{uuid.uuid4().hex[:8]}")
    queue = client.queue_name("bench", uuid.uuid4().hex[:12])
    with tempfile.TemporaryDirectory() as tmp:
        agent = start_agent(Path(tmp), args.url, queue, client.result_queue)
        try:
            if not client.is_ready(queue, 30):
                print("agent did not start", file=sys.stderr)
                return 1

            report = [measure(client, queue, kind, args.plans, args.samples) for kind in KINDS]
        finally:
            agent.terminate()
            agent.wait(10)
            client.close()
            with kombu.Connection(args.url) as conn:
                for name in (queue, client.result_queue):
                    conn.default_channel.queue_delete(name)

    for kind, rate, plans, elapsed, median, p95 in report:
        print(
            f"{kind:6} throughput: {rate:.0f} no-op plans/s through one agent ({plans} plans in "
            f"{elapsed:.2f} s), target >= 200: {'PASS' if rate >= 200 else 'FAIL'}"
        )
        print(
            f"{kind:6} round trip: median {median:.2f} ms, p95 {p95:.2f} ms, "
            f"target median < 15 ms: {'PASS' if median < 15 else 'FAIL'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
