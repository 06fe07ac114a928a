"""Agent throughput and engine round-trip latency over the real RabbitMQ.

Starts one ``murano-agent`` process, then measures, for two kinds of no-op plan:
* plans per second through it (many calls in flight);
* the median round trip of one ``AgentClient.call`` at a time.
The kinds: ``body`` (the plan's Body does nothing, like the readiness ping) and
``script`` (the Body runs a no-op shell script: a process per plan).
Targets: ``body`` 200 plans/s and a median round trip under 15 ms; ``script``
(a shell started per plan) 50 plans/s and under 40 ms.

    python benchmarks/agent_bench.py [--url amqp://guest:guest@127.0.0.1:5672//]
                                     [--plans 300] [--runs 3]
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

import figures
import kombu

from murano_engine.messaging import AgentClient

#: kind -> (plans/s, median round trip ms) targets
TARGETS = {"body": (200, 15), "script": (50, 40)}
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


def measure(client: AgentClient, queue: str, kind: str, plans: int, samples: int,
            runs: int) -> None:
    """Throughput (``runs`` rounds of ``plans`` plans, 8 in flight) and round trip (``samples``
    calls one at a time) for one kind of no-op plan; every result is checked."""

    def call() -> object:
        plan = client.build_plan(KINDS[kind], lambda name: b"#!/bin/sh\nexit 0\n")
        return client.call(queue, plan, 60)

    for _ in range(20):
        call()  # warm-up
    rates = []
    for _ in range(runs):
        started = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            outcomes = list(pool.map(lambda _: call(), range(plans)))
        rates.append(plans / (time.perf_counter() - started))
        if outcomes != [0] * plans:
            raise SystemExit(f"{kind}: plans returned {set(map(repr, outcomes))}, not 0")
    figures.figure(f"{kind} plans through one agent ({plans} per run, 8 in flight)", rates,
                   "plans/s", TARGETS[kind][0], higher_is_better=True)
    latencies = []
    for _ in range(samples):
        begin = time.perf_counter()
        if call() != 0:
            raise SystemExit(f"{kind}: a plan did not return 0")
        latencies.append(time.perf_counter() - begin)
    figures.figure(f"{kind} plan round trip, one at a time (p95 "
                   f"{statistics.quantiles(latencies, n=20)[-1] * 1000:.1f} ms)", latencies,
                   "ms", TARGETS[kind][1], scale=1000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="amqp://guest:guest@127.0.0.1:5672//")
    parser.add_argument("--plans", type=int, default=300, help="plans per throughput run")
    parser.add_argument("--runs", type=int, default=3, help="throughput runs")
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

            figures.method(f"one murano-agent process, the engine's AgentClient over the real "
                           f"RabbitMQ ({args.url.split('@')[-1]}); throughput median of "
                           f"{args.runs} runs, round trip median of {args.samples} calls")
            for kind in KINDS:
                measure(client, queue, kind, args.plans, args.samples, args.runs)
        finally:
            agent.terminate()
            agent.wait(10)
            client.close()
            with kombu.Connection(args.url) as conn:
                for name in (queue, client.result_queue):
                    conn.default_channel.queue_delete(name)
    figures.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
